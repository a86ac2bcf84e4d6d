import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_CHUNK_CHARS } from '../src/chunk.js';
import { chunkMarkdown } from '../src/chunk-markdown.js';
import { chunkPlainText } from '../src/chunk-text.js';
import { chunkCorpus } from '../src/corpus.js';
import { packParagraphs, splitParagraphs } from '../src/paragraphs.js';

const fixture = readFileSync(new URL('fixtures/chunking.md', import.meta.url), 'utf8');

describe('chunkMarkdown', () => {
  it('makes one chunk per heading path, skips empty sections and splits long ones at paragraphs', () => {
    expect(chunkMarkdown('docs/chunking.md', fixture, 120)).toEqual([
      { source: 'docs/chunking.md', heading: '', text: 'Text before any heading.' },
      {
        source: 'docs/chunking.md',
        heading: 'Guide > Setup',
        text: 'Guide > Setup\n\nInstall the tool.\n\n```sh\n# not a heading: inside a code fence\n\necho done\n```',
      },
      {
        source: 'docs/chunking.md',
        heading: 'Guide > Usage > Daily',
        text:
          'Guide > Usage > Daily\n\n' +
          'First paragraph of daily use, long enough to share a chunk with the next one.\n\n' +
          'Second paragraph.',
      },
      {
        source: 'docs/chunking.md',
        heading: 'Guide > Usage > Daily',
        text: 'Guide > Usage > Daily\n\nThird paragraph, which no longer fits in the same chunk as the two before it.',
      },
      {
        source: 'docs/chunking.md',
        heading: 'Guide > Last words',
        text: 'Guide > Last words\n\nShort.',
      },
    ]);
  });

  it('keeps a section whole when it fits the default size', () => {
    const chunks = chunkMarkdown('chunking.md', fixture);
    expect(chunks.map((chunk) => chunk.heading)).toEqual([
      '',
      'Guide > Setup',
      'Guide > Usage > Daily',
      'Guide > Last words',
    ]);
    expect(chunks.every((chunk) => chunk.text.length <= MAX_CHUNK_CHARS)).toBe(true);
  });

  it('keeps a section of exactly MAX_CHUNK_CHARS (1,200) whole and splits one a character longer', () => {
    const first = 'a'.repeat(600);
    // 'H', a blank line, two paragraphs and the blank line between them: 3 + 600 + 2 + 595.
    expect(
      chunkMarkdown('x.md', `# H\n\n${first}\n\n${'b'.repeat(595)}`).map((c) => c.text.length),
    ).toEqual([1200]);
    expect(
      chunkMarkdown('x.md', `# H\n\n${first}\n\n${'b'.repeat(596)}`).map((c) => c.text.length),
    ).toEqual([603, 599]);
  });

  it('gives the body at least half of the chunk however long the heading path', () => {
    const heading = 'Thirty characters of a heading';
    expect(heading).toHaveLength(30);
    // 40 - 30 - 2 would leave 8 characters for the body: it gets 20.
    expect(
      chunkMarkdown('x.md', `# ${heading}\n\none two three four five six seven eight`, 40).map(
        (chunk) => chunk.text,
      ),
    ).toEqual([`${heading}\n\none two three four`, `${heading}\n\nfive six seven eight`]);
  });

  it('pops the heading path back to the level of each new heading and reads CRLF files', () => {
    const markdown = '# A\r\n## B\r\nb\r\n### C\r\nc\r\n## D\r\nd\r\n# E ##\r\ne\r\n';
    expect(chunkMarkdown('x.md', markdown).map((chunk) => chunk.text)).toEqual([
      'A > B\n\nb',
      'A > B > C\n\nc',
      'A > D\n\nd',
      'E\n\ne',
    ]);
  });

  it('does not treat #tags or fenced lines as headings', () => {
    const markdown = '# Top\n#tag is text\n~~~\n## fenced\n~~~\n';
    expect(chunkMarkdown('x.md', markdown)).toEqual([
      { source: 'x.md', heading: 'Top', text: 'Top\n\n#tag is text\n~~~\n## fenced\n~~~' },
    ]);
  });

  it('takes only ATX headings of one to six #, indented at most three spaces', () => {
    const markdown = '# Top\n    # indented code\n####### seven\n   ### Sub\nbody\n';
    expect(chunkMarkdown('x.md', markdown).map((chunk) => chunk.text)).toEqual([
      'Top\n\n    # indented code\n####### seven',
      'Top > Sub\n\nbody',
    ]);
  });

  it('closes a fence only with a bare run of its own character, at least as long', () => {
    const fenced = (inner: string) =>
      chunkMarkdown('x.md', `# F\n\n\`\`\`\`\n${inner}\n\n# inside\n\`\`\`\`\n\nafter`).map(
        (chunk) => chunk.text,
      );
    for (const inner of ['~~~~', '```', '````js']) {
      expect(fenced(inner)).toEqual([`F\n\n\`\`\`\`\n${inner}\n\n# inside\n\`\`\`\`\n\nafter`]);
    }
    // Two backticks open no fence: the heading after them counts.
    expect(chunkMarkdown('x.md', '# F\n\n``\n\n# G\n\ng').map((chunk) => chunk.text)).toEqual([
      'F\n\n``',
      'G\n\ng',
    ]);
  });

  it('keeps every chunk within the limit, cutting an overlong paragraph at line ends and spaces', () => {
    const paragraph = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
    const chunks = chunkMarkdown('x.md', `# H\n\n${paragraph}`, 60);
    expect(chunks.map((chunk) => chunk.text)).toEqual([
      'H\n\nword0 word1 word2 word3 word4 word5 word6 word7 word8',
      'H\n\nword9 word10 word11 word12 word13 word14 word15 word16',
      'H\n\nword17 word18 word19 word20 word21 word22 word23 word24',
      'H\n\nword25 word26 word27 word28 word29',
    ]);
    expect(chunks.every((chunk) => chunk.text.length <= 60)).toBe(true);
  });
});

describe('chunkPlainText', () => {
  it('packs blank-line paragraphs up to the limit, with no heading', () => {
    const text = 'one two three\nfour\n\n\nfive six\n\nseven eight nine ten eleven\n';
    expect(chunkPlainText('notes/a.txt', text, 30)).toEqual([
      { source: 'notes/a.txt', heading: '', text: 'one two three\nfour\n\nfive six' },
      { source: 'notes/a.txt', heading: '', text: 'seven eight nine ten eleven' },
    ]);
  });
});

describe('paragraphs', () => {
  it('splits at blank lines outside code fences only when asked', () => {
    const text = 'a\n\n```\nb\n\nc\n```\n\nd  ';
    expect(splitParagraphs(text, { fences: true })).toEqual(['a', '```\nb\n\nc\n```', 'd']);
    expect(splitParagraphs(text, { fences: false })).toEqual(['a', '```\nb', 'c\n```', 'd']);
  });

  it('fills a piece up to the budget exactly, counting the separators', () => {
    // Paragraphs are joined by a blank line (2 characters), lines of a long paragraph by 1.
    expect(packParagraphs(['abc', 'de'], 7)).toEqual(['abc\n\nde']);
    expect(packParagraphs(['abc', 'de'], 6)).toEqual(['abc', 'de']);
    expect(packParagraphs(['ab\ncd\nef'], 5)).toEqual(['ab\ncd', 'ef']);
    // A line is cut at the last space within the budget, even one right at it.
    expect(packParagraphs(['ab cd efgh'], 5)).toEqual(['ab cd', 'efgh']);
  });

  it('cuts a word longer than the budget as a last resort', () => {
    expect(packParagraphs(['abcdefghij', 'k'], 4)).toEqual(['abcd', 'efgh', 'ij', 'k']);
  });
});

describe('chunkCorpus', () => {
  it('chunks Markdown by heading and other files as plain text', () => {
    const chunks = chunkCorpus([
      { path: 'a.md', text: '# T\n\nbody\n\n# U\n\nmore' },
      { path: 'b.txt', text: '# not a heading\n\nplain' },
    ]);
    expect(chunks).toEqual([
      { source: 'a.md', heading: 'T', text: 'T\n\nbody' },
      { source: 'a.md', heading: 'U', text: 'U\n\nmore' },
      { source: 'b.txt', heading: '', text: '# not a heading\n\nplain' },
    ]);
  });
});
