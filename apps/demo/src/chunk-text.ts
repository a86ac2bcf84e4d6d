import { type Chunk, MAX_CHUNK_CHARS } from './chunk.js';
import { packParagraphs, splitParagraphs } from './paragraphs.js';

/**
 * Chunks plain text by blank-line paragraphs, packing consecutive short
 * paragraphs together up to `maxChars`. Plain text has no headings: every
 * chunk's heading is ''.
 */
export function chunkPlainText(source: string, text: string, maxChars = MAX_CHUNK_CHARS): Chunk[] {
  const paragraphs = splitParagraphs(text.replace(/\r\n?/g, '\n'), { fences: false });
  return packParagraphs(paragraphs, maxChars).map((body) => ({ source, heading: '', text: body }));
}
