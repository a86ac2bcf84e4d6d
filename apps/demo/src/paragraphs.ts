const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Splits text into paragraphs at blank lines. With `fences`, a blank line
 * inside a Markdown code fence does not end a paragraph. Trailing spaces are
 * trimmed from every line; empty paragraphs are dropped.
 */
export function splitParagraphs(text: string, options: { fences: boolean }): string[] {
  const paragraphs: string[] = [];
  let current: string[] = [];
  let fence: string | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (options.fences) fence = nextFence(fence, line);
    if (line === '' && fence === null) {
      if (current.length > 0) paragraphs.push(current.join('\n'));
      current = [];
    } else {
      current.push(line);
    }
  }
  if (current.length > 0) paragraphs.push(current.join('\n'));
  return paragraphs;
}

/**
 * The open fence after `line`: a fence opens with three or more backticks or
 * tildes and closes with a run of the same character at least as long.
 */
export function nextFence(open: string | null, line: string): string | null {
  const marker = FENCE.exec(line)?.[1];
  if (marker === undefined) return open;
  if (open === null) return marker;
  return marker[0] === open[0] && marker.length >= open.length && line.trim() === marker
    ? null
    : open;
}

/**
 * Packs paragraphs greedily, in order, into pieces of at most `budget`
 * characters joined by blank lines. A paragraph longer than the budget is cut
 * at line ends, then at spaces, and only as a last resort inside a word.
 */
export function packParagraphs(paragraphs: readonly string[], budget: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const paragraph of paragraphs) {
    for (const part of paragraph.length > budget ? splitLong(paragraph, budget) : [paragraph]) {
      if (current === '') {
        current = part;
      } else if (current.length + 2 + part.length <= budget) {
        current = `${current}\n\n${part}`;
      } else {
        pieces.push(current);
        current = part;
      }
    }
  }
  if (current !== '') pieces.push(current);
  return pieces;
}

function splitLong(paragraph: string, budget: number): string[] {
  const parts: string[] = [];
  let current = '';
  for (const line of paragraph.split('\n')) {
    for (const part of line.length > budget ? splitLine(line, budget) : [line]) {
      if (current === '') {
        current = part;
      } else if (current.length + 1 + part.length <= budget) {
        current = `${current}\n${part}`;
      } else {
        parts.push(current);
        current = part;
      }
    }
  }
  if (current !== '') parts.push(current);
  return parts;
}

function splitLine(line: string, budget: number): string[] {
  const parts: string[] = [];
  let rest = line;
  while (rest.length > budget) {
    const space = rest.lastIndexOf(' ', budget);
    const cut = space > 0 ? space : budget;
    parts.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest !== '') parts.push(rest);
  return parts;
}
