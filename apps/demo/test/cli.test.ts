import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { DemoReport } from '../src/report.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const main = join(repoRoot, 'apps/demo/dist/main.js');
const fixtures = fileURLToPath(new URL('fixtures/', import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), 'mnemo-demo-cli-'));

function demo(...args: string[]) {
  const result = spawnSync(process.execPath, [main, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe('the demo program', () => {
  it('runs the default corpus and questions on a DuckDB file in the cwd, and replays plans', () => {
    const { code, stdout, stderr } = demo('--json');
    expect(stderr).toContain('ingesting');
    expect(code).toBe(0);
    const report = JSON.parse(stdout.trimEnd().split('\n').at(-1) as string) as DemoReport;
    expect(report.corpus.source).toBe('default');
    expect(report.corpus.files).toBeGreaterThanOrEqual(8);
    expect(report.database).toEqual({ store: 'duckdb', path: './mnemo-demo.duckdb', kept: false });
    expect(report.planHits).toBeGreaterThanOrEqual(1);
    expect(report.planHits + report.planMisses).toBe(report.questions);
    expect(report.retrievalCalls).toEqual({ made: report.planMisses, saved: report.planHits });
    expect(report.plansNotCached).toBeGreaterThanOrEqual(1);
    // The lifecycle: a poorly rated replay retired its plan, and a later lookup skipped it.
    expect([report.plansRetired, report.retiredPlansSkipped]).toEqual([1, 1]);
    expect(report.audit.ok).toBe(true);
    expect(existsSync(join(cwd, 'mnemo-demo.duckdb'))).toBe(true);
  });

  it('prints an aligned text report and one progress line per question', () => {
    const corpus = join(fixtures, 'garden');
    const { code, stdout, stderr } = demo(
      '--corpus',
      corpus,
      '--queries',
      join(fixtures, 'garden-queries.txt'),
      '--store',
      'duckdb::memory:',
    );
    expect(code).toBe(0);
    expect(stderr).toMatch(
      /^\[6\/6\] miss, retrieval, cached +score 1\.00 .* Which tools should every gardener own\?$/m,
    );
    const lines = stdout.trimEnd().split('\n');
    expect(lines.map((line) => line.replace(/\d+\.\d ms/, 'N ms'))).toEqual([
      'mnemo demo report',
      `  corpus                        ${corpus}: 2 files, 4 chunks`,
      '  database                      DuckDB :memory: (fresh)',
      '  agent                         demo-agent',
      '  questions                     6',
      '  plan hits                     2 (33.3%), similarity threshold 0.7',
      '  misses                        4',
      '  plans cached                  3',
      '  plans not cached (low score)  1',
      '  retrieval calls               4 made, 2 saved',
      '  mean latency, plan hit        N ms  (plan lookup + fetch by id)',
      '  mean latency, retrieval path  N ms  (plan lookup + recall + score + cache)',
      '  mean latency, plan lookup     N ms  (recallPlan, part of both paths)',
      '  wrong replays (scorer)        0 of 2',
      '  plans retired (poor replays)  0',
      '  lookups past a retired plan   0',
      '  audit                         ok, 19 events in 1 chain',
    ]);
  });

  it('runs in memory without touching a file named :memory: in the cwd', () => {
    writeFileSync(join(cwd, ':memory:'), 'not a database\n');
    const { code } = demo(
      '--db',
      ':memory:',
      '--corpus',
      join(fixtures, 'garden'),
      '--queries',
      join(fixtures, 'garden-queries.txt'),
    );
    expect(code).toBe(0);
    expect(readFileSync(join(cwd, ':memory:'), 'utf8')).toBe('not a database\n');
  });

  it('prints the usage with --help', () => {
    const { code, stdout } = demo('--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: pnpm demo/);
    expect(stdout).toContain('--threshold <n>');
  });

  it.each([
    [['--bogus'], "Unknown option '--bogus'"],
    [['--threshold', '0'], "--threshold must be a number in (0, 1], got '0'"],
    [['--corpus', 'no-such-folder'], '--corpus: no such folder: no-such-folder'],
    [['--queries', 'no-such-file.txt'], '--queries: cannot read no-such-file.txt: no such file'],
    [
      ['--store', 'mysql:x'],
      "--store: unknown store 'mysql' (expected duckdb:<file> or postgres:<url>)",
    ],
    [
      ['--store', 'postgres:'],
      '--store postgres:<url> needs a URL, e.g. postgres:postgres://user:password@127.0.0.1:5432/db',
    ],
    [
      ['--store', 'duckdb::memory:', '--db', ':memory:'],
      '--store and --db cannot be used together (--db <file> is short for --store duckdb:<file>)',
    ],
    [
      ['--db', ':memory:', '--pg-schema', 'x'],
      '--pg-schema applies only to --store postgres:<url>',
    ],
  ])('exits 2 with one line on stderr for %j', (args, message) => {
    const { code, stdout, stderr } = demo(...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(message);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('exits 2 for a corpus folder without documents', () => {
    mkdirSync(join(cwd, 'empty'));
    const { code, stderr } = demo('--corpus', 'empty');
    expect(code).toBe(2);
    expect(stderr).toBe('mnemo demo: --corpus: no .md or .txt files in empty (see --help)\n');
  });

  it('exits 1 when the store is unavailable, such as a database in a folder that does not exist', () => {
    const db = join(cwd, 'no', 'such', 'dir', 'x.duckdb');
    const { code, stdout, stderr } = demo('--db', db, '--corpus', join(fixtures, 'garden'));
    expect(code).toBe(1);
    expect(stdout).toBe('');
    // The store is named once, in front; DuckDB's own message follows.
    expect(stderr).toBe(
      `mnemo demo: store unavailable (DuckDB ${db}): opening ${db} failed: ` +
        `IO Error: Cannot open file "${db}": No such file or directory\n`,
    );
  });

  it('exits 1 with one line, without the password, when no PostgreSQL server answers', () => {
    // Port 1 on the loopback: nothing listens there, so the connection is refused at once.
    const { code, stdout, stderr } = demo(
      '--store',
      'postgres:postgres://demo:s3cret-pw@127.0.0.1:1/nowhere',
      '--corpus',
      join(fixtures, 'garden'),
    );
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'mnemo demo: store unavailable (PostgreSQL postgres://demo:***@127.0.0.1:1/nowhere, schema mnemo_demo): ' +
        'connecting failed: connect ECONNREFUSED 127.0.0.1:1\n',
    );
  });
});
