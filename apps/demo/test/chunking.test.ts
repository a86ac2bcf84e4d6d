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
