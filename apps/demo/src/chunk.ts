/** One piece of a corpus file, remembered as one record. */
export interface Chunk {
  /** The file's path relative to the corpus root, with `/` separators. */
  source: string;
  /** The heading path (`Title > Section > Subsection`), '' for text before any heading or plain text. */
  heading: string;
  /** What is remembered: the heading path, a blank line, then the body. */
  text: string;
}

/** Sections longer than this are split at paragraph boundaries (characters, heading included). */
export const MAX_CHUNK_CHARS = 1200;

/** The text of a chunk: its heading path, a blank line, its body. */
export function chunkText(heading: string, body: string): string {
  return heading === '' ? body : `${heading}\n\n${body}`;
}
