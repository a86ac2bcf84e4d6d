import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_AGENT, DEFAULT_DB, type DemoRunArgs, parseDemoArgs } from '../src/args.js';
import { loadQuestions, parseQuestions } from '../src/questions.js';
import {
  DEFAULT_PG_SCHEMA,
  describeStore,
  maskUrl,
  parseStoreSpec,
  redactSecrets,
} from '../src/store-spec.js';
import { UsageError } from '../src/usage-error.js';

/** `parseDemoArgs` of a run's arguments (no -h). */
function runArgs(argv: readonly string[]): DemoRunArgs {
  const args = parseDemoArgs(argv);
  if (args.help) throw new Error('expected a run, got --help');
  return args;
}

describe('parseDemoArgs', () => {
  it('has defaults for everything', () => {
    expect(parseDemoArgs([])).toEqual({
      help: false,
      corpus: null,
      queries: null,
      store: { kind: 'duckdb', path: DEFAULT_DB },
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
      ]),
    ).toEqual({
      help: false,
      corpus: 'docs',
      queries: 'q.txt',
      store: { kind: 'duckdb', path: ':memory:' },
      keep: true,
      threshold: 1,
      agent: 'agent-7',
      json: true,
    });
  });

  it('asks for help alone with -h or --help, whatever the other values', () => {
    expect(parseDemoArgs(['-h'])).toEqual({ help: true });
    expect(parseDemoArgs(['--threshold', '5', '--agent', 'a b', '--help'])).toEqual({ help: true });
    expect(parseDemoArgs(['--', '--db', '', '-h'])).toEqual({ help: true });
  });

  it('reads --threshold as a decimal number', () => {
    const threshold = (text: string) => runArgs(['--threshold', text]).threshold;
    expect(threshold('0.5')).toBe(0.5);
    expect(threshold('.25')).toBe(0.25);
    expect(threshold('1.')).toBe(1);
    expect(threshold('5e-1')).toBe(0.5);
    expect(threshold(' 0.9 ')).toBe(0.9);
  });

  it('ignores one leading --, as pnpm passes it through', () => {
    expect(runArgs(['--', '--json']).json).toBe(true);
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
    [['--threshold', '0x1'], "--threshold must be a number in (0, 1], got '0x1'"],
    [['--threshold', '0b1'], "--threshold must be a number in (0, 1], got '0b1'"],
    [['--threshold', '+1'], "--threshold must be a number in (0, 1], got '+1'"],
    [['--threshold', '1_0'], "--threshold must be a number in (0, 1], got '1_0'"],
    [['--bogus', '--help'], "Unknown option '--bogus'"],
    [['--agent', 'a b'], "--agent must be 1-256 characters of A-Z a-z 0-9 . _ -, got 'a b'"],
    [['--db', ''], '--db must not be empty'],
    [['--db', '  '], '--db must not be empty'],
    [['--corpus', ' '], '--corpus must not be empty'],
    [['--queries', ''], '--queries must not be empty'],
  ])('rejects %j with a UsageError', (argv, message) => {
    expect(() => parseDemoArgs(argv)).toThrow(UsageError);
    expect(() => parseDemoArgs(argv)).toThrow(message);
  });
});

describe('--store', () => {
  const url = 'postgres://user:s3cret-pw@127.0.0.1:5432/db';
  const store = (...argv: string[]) => runArgs(argv).store;

  it('reads duckdb:<file>, the same as --db <file>', () => {
    expect(store('--store', 'duckdb:./other.duckdb')).toEqual({
      kind: 'duckdb',
      path: './other.duckdb',
    });
    expect(store('--store', 'duckdb::memory:')).toEqual({ kind: 'duckdb', path: ':memory:' });
    expect(store('--store=duckdb:/tmp/a:b.duckdb')).toEqual({
      kind: 'duckdb',
      path: '/tmp/a:b.duckdb',
    });
    expect(store('--db', 'x.duckdb')).toEqual(store('--store', 'duckdb:x.duckdb'));
    expect(store('--db', ':memory:')).toEqual({ kind: 'duckdb', path: ':memory:' });
  });

  it('reads postgres:<url>, in the schema mnemo_demo unless --pg-schema names another', () => {
    expect(DEFAULT_PG_SCHEMA).toBe('mnemo_demo');
    expect(store('--store', `postgres:${url}`)).toEqual({
      kind: 'postgres',
      url,
      schema: 'mnemo_demo',
    });
    expect(store('--pg-schema', 'demo_2', '--store', `postgres:${url}`)).toEqual({
      kind: 'postgres',
      url,
      schema: 'demo_2',
    });
    expect(store('--store', 'postgres:postgresql://db.example/mnemo?sslmode=require')).toEqual({
      kind: 'postgres',
      url: 'postgresql://db.example/mnemo?sslmode=require',
      schema: 'mnemo_demo',
    });
  });

  it.each([
    [['--store', ''], '--store must not be empty'],
    [
      ['--store', 'mnemo.duckdb'],
      "--store must be duckdb:<file> or postgres:<url>, got 'mnemo.duckdb'",
    ],
    [
      ['--store', 'mysql:x'],
      "--store: unknown store 'mysql' (expected duckdb:<file> or postgres:<url>)",
    ],
    [['--store', ':x'], "--store must be duckdb:<file> or postgres:<url>, got ':x'"],
    [['--store', 'duckdb:'], '--store duckdb:<file> needs a file name or :memory:'],
    [
      ['--store', 'postgres:'],
      '--store postgres:<url> needs a URL, e.g. postgres:postgres://user:password@127.0.0.1:5432/db',
    ],
    [
      ['--store', 'postgres:  '],
      '--store postgres:<url> needs a URL, e.g. postgres:postgres://user:password@127.0.0.1:5432/db',
    ],
    [
      ['--store', 'postgres:mysql://u:pw@h/db'],
      '--store postgres:<url>: the URL is not a valid postgres:// or postgresql:// URL (e.g. postgres:postgres://user:password@127.0.0.1:5432/db)',
    ],
    [
      ['--store', 'postgres://u:pw@h/db'],
      '--store postgres:<url>: the URL is not a valid postgres:// or postgresql:// URL (e.g. postgres:postgres://user:password@127.0.0.1:5432/db)',
    ],
    [
      ['--store', 'postgres:postgres://u:pw@h:99999/db'],
      '--store postgres:<url>: the URL is not a valid postgres:// or postgresql:// URL (e.g. postgres:postgres://user:password@127.0.0.1:5432/db)',
    ],
    [
      ['--store', 'duckdb:x.duckdb', '--db', 'x.duckdb'],
      '--store and --db cannot be used together (--db <file> is short for --store duckdb:<file>)',
    ],
    [
      ['--db', ':memory:', '--store', `postgres:${url}`],
      '--store and --db cannot be used together (--db <file> is short for --store duckdb:<file>)',
    ],
    [['--pg-schema', 'demo'], '--pg-schema applies only to --store postgres:<url>'],
    [
      ['--pg-schema', 'demo', '--store', 'duckdb::memory:'],
      '--pg-schema applies only to --store postgres:<url>',
    ],
    [['--store', `postgres:${url}`, '--pg-schema', ''], '--pg-schema must not be empty'],
    ...['Demo', '1demo', 'my-schema', 'pg_demo', 'a'.repeat(64), 'x"; DROP SCHEMA public; --'].map(
      (name): [string[], string] => [
        ['--store', `postgres:${url}`, '--pg-schema', name],
        `--pg-schema must be 1-63 characters of a-z 0-9 _, not starting with a digit or pg_, got '${name}'`,
      ],
    ),
  ])('rejects %j with a UsageError', (argv, message) => {
    expect(() => parseDemoArgs(argv)).toThrow(UsageError);
    expect(() => parseDemoArgs(argv)).toThrow(message);
  });

  it('accepts a schema name of 63 characters, the most PostgreSQL allows', () => {
    const name = `s${'0'.repeat(62)}`;
    expect(store('--store', `postgres:${url}`, '--pg-schema', name)).toEqual({
      kind: 'postgres',
      url,
      schema: name,
    });
  });

  it('never repeats a password in its errors', () => {
    for (const spec of ['postgres:postgres://u:s3cret-pw@h:99999/db', 'postgres://u:s3cret-pw@h']) {
      expect(() => parseStoreSpec(spec)).toThrow(UsageError);
      expect(() => parseStoreSpec(spec)).not.toThrow('s3cret-pw');
    }
  });

  it('masks the password for the report', () => {
    expect(maskUrl(url)).toBe('postgres://user:***@127.0.0.1:5432/db');
    expect(maskUrl('postgres://user@h/db')).toBe('postgres://user@h/db');
    expect(maskUrl('postgres://h/db?password=pw&sslmode=require')).toBe(
      'postgres://h/db?password=***&sslmode=require',
    );
    expect(describeStore(parseStoreSpec(`postgres:${url}`, 'demo'))).toBe(
      'PostgreSQL postgres://user:***@127.0.0.1:5432/db, schema demo',
    );
    expect(describeStore({ kind: 'duckdb', path: ':memory:' })).toBe('DuckDB :memory:');
    // Something that is not a URL at all is masked whole.
    expect(maskUrl('postgres//user:pw@h/db')).toBe('***');
  });

  it('masks the password in messages', () => {
    const spec = parseStoreSpec('postgres:postgres://user:p%40ss-word@h/db');
    expect(
      redactSecrets('bad postgres://user:p%40ss-word@h/db, p@ss-word, p%40ss-word', spec),
    ).toBe('bad postgres://user:***@h/db, ***, ***');
    expect(redactSecrets('p@ss-word', { kind: 'duckdb', path: 'p@ss-word' })).toBe('p@ss-word');
  });

  it('masks passwords of four characters or more wherever they occur, shorter ones only in the URL', () => {
    const four = parseStoreSpec('postgres:postgres://user:k3y!@h/db');
    expect(redactSecrets('user k3y! at postgres://user:k3y!@h/db', four)).toBe(
      'user *** at postgres://user:***@h/db',
    );
    // 'pw' would mask parts of ordinary words: only the URL is masked.
    const short = parseStoreSpec('postgres:postgres://user:pw@h/db');
    expect(redactSecrets('pwd: postgres://user:pw@h/db failed', short)).toBe(
      'pwd: postgres://user:***@h/db failed',
    );
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
