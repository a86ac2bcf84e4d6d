import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_AGENT, DEFAULT_DB, parseDemoArgs } from '../src/args.js';
import { loadQuestions, parseQuestions } from '../src/questions.js';
import { UsageError } from '../src/usage-error.js';

describe('parseDemoArgs', () => {
  it('has defaults for everything', () => {
    expect(parseDemoArgs([])).toEqual({
      help: false,
      corpus: null,
      queries: null,
      db: DEFAULT_DB,
      keep: false,
      threshold: 0.7,
      agent: DEFAULT_AGENT,
      json: false,
    });
  });

  it('reads every flag', () => {
    expect(
      parseDemoArgs([
        '--corpus=docs',
        '--queries',
        'q.txt',
        '--db',
        ':memory:',
        '--keep',
        '--threshold',
        '1',
        '--agent',
        'agent-7',
        '--json',
        '-h',
      ]),
    ).toEqual({
      help: true,
      corpus: 'docs',
      queries: 'q.txt',
      db: ':memory:',
      keep: true,
      threshold: 1,
      agent: 'agent-7',
      json: true,
    });
  });

  it('ignores one leading --, as pnpm passes it through', () => {
    expect(parseDemoArgs(['--', '--json']).json).toBe(true);
    expect(() => parseDemoArgs(['--json', '--', '--keep'])).toThrow("Unexpected argument '--keep'");
  });

  it.each([
    [['--bogus'], "Unknown option '--bogus'"],
    [['stray'], "Unexpected argument 'stray'"],
    [['--corpus'], "Option '--corpus <value>' argument missing"],
    [['--threshold', '0'], "--threshold must be a number in (0, 1], got '0'"],
    [['--threshold', '1.5'], "--threshold must be a number in (0, 1], got '1.5'"],
    [['--threshold', 'high'], "--threshold must be a number in (0, 1], got 'high'"],
    [['--threshold', ''], "--threshold must be a number in (0, 1], got ''"],
    [['--agent', 'a b'], "--agent must be 1-256 characters of A-Z a-z 0-9 . _ -, got 'a b'"],
    [['--db', ''], '--db must not be empty'],
  ])('rejects %j with a UsageError', (argv, message) => {
    expect(() => parseDemoArgs(argv)).toThrow(UsageError);
    expect(() => parseDemoArgs(argv)).toThrow(message);
  });
});

describe('questions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-demo-questions-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('parses one question per line, skipping blanks and # comments', () => {
    expect(parseQuestions('# comment\n  first?  \r\n\n#another\nsecond # not a comment\n')).toEqual(
      ['first?', 'second # not a comment'],
    );
  });

  it('rejects a missing or empty file with a UsageError', async () => {
    await expect(loadQuestions(join(dir, 'missing.txt'))).rejects.toThrow(
      `--queries: cannot read ${join(dir, 'missing.txt')}: no such file`,
    );
    writeFileSync(join(dir, 'empty.txt'), '# only a comment\n\n');
    await expect(loadQuestions(join(dir, 'empty.txt'))).rejects.toThrow(UsageError);
    await expect(loadQuestions(dir)).rejects.toThrow(UsageError);
  });
});
