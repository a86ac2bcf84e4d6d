import { type Chunk, chunkText, MAX_CHUNK_CHARS } from './chunk.js';
import { nextFence, packParagraphs, splitParagraphs } from './paragraphs.js';

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;

interface Section {
  heading: string;
  lines: string[];
}

/**
 * Chunks Markdown by heading: every ATX heading (`#` … `######`, not inside a
 * code fence) starts a section whose heading path is the titles of the
 * headings above it joined with ` > `. A section whose body is empty (a
 * heading directly followed by a sub-heading) makes no chunk; a section
 * longer than `maxChars` is split at paragraph boundaries. Text before the
 * first heading is a section with the heading ''.
 */
export function chunkMarkdown(
  source: string,
  markdown: string,
  maxChars = MAX_CHUNK_CHARS,
): Chunk[] {
  const chunks: Chunk[] = [];
  for (const section of sections(markdown)) {
    const paragraphs = splitParagraphs(section.lines.join('\n'), { fences: true });
    if (paragraphs.length === 0) continue;
    // However long the heading path, the body gets at least half of the chunk.
    const budget = Math.max(
      Math.ceil(maxChars / 2),
      maxChars - (section.heading === '' ? 0 : section.heading.length + 2),
    );
    for (const body of packParagraphs(paragraphs, budget)) {
      chunks.push({ source, heading: section.heading, text: chunkText(section.heading, body) });
    }
  }
  return chunks;
}

function sections(markdown: string): Section[] {
  const result: Section[] = [{ heading: '', lines: [] }];
  const path: { level: number; title: string }[] = [];
  let fence: string | null = null;
  for (const line of markdown.replace(/\r\n?/g, '\n').split('\n')) {
    const wasInFence = fence !== null;
    fence = nextFence(fence, line);
    const match = wasInFence ? null : HEADING.exec(line);
    const current = result.at(-1) as Section;
    if (match === null) {
      current.lines.push(line);
      continue;
    }
    const level = (match[1] as string).length;
    while (path.length > 0 && (path.at(-1) as { level: number }).level >= level) path.pop();
    path.push({ level, title: (match[2] ?? '').trim() });
    result.push({ heading: path.map((entry) => entry.title).join(' > '), lines: [] });
  }
  return result;
}
