import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { recallCommand } from '../src/recall/command.js';
import { memoryOutput } from '../src/shared/output.js';

const fixture = fileURLToPath(new URL('fixtures/locomo-tiny.json', import.meta.url));
const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PG_URL = process.env.MNEMO_TEST_PG_URL;
const scratch = mkdtempSync(join(tmpdir(), 'bench-recall-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function bench(...args: string[]) {
  const output = memoryOutput();
  const code = await recallCommand(args, output);
  const last = output.stdout.at(-1);
  return {
    code,
    stdout: output.stdout,
    stderr: output.stderr,
    // biome-ignore lint/suspicious/noExplicitAny: the JSON line, checked field by field
    json: (code === 0 && last !== undefined ? JSON.parse(last) : undefined) as any,
  };
}

// Expected figures on the fixture, derived by hand and cross-checked with an independent
// implementation. 8 scored questions: conv A/1 has 6 (its category 5 question and the one
// without evidence are left out), conv-B 2. Rank of the gold turn(s), mnemo / baseline:
//   breed of dog  D1:3       2 / 2   (D1:2 names breed, dog and Alice; D1:3 dog in its caption)
//   violin        D1:4,D2:2  1,2 / 1,3
//   marathon      D2:1       1 / 1   (evidence "D:2:1")
//   mountain      D2:3       1 / 2   (the baseline matches "which" in D1:2)
//   puppy's name  D1:1       1 / 3   (the baseline matches "is", "the", "of" elsewhere)
//   kayak         D2:8       none / none (no shared word; semantic: cosine 0, last of 12)
//   Carol chess   D1:3       1 / 1
//   Dan's game    D1:2       1 / 1
// mnemo: recall@1 (0 + .5 + 1 + 1 + 1 + 0 + 1 + 1) / 8 = .6875, recall@5/10 and hit@10 7/8,
// MRR 6.5/8 = .8125. Baseline: recall@1 3.5/8 = .4375, MRR (.5+1+1+.5+1/3+0+1+1) / 8 = .6667.
// The turns are of similar length and every gold turn that is found matches more query terms
// than the turns it beats, so these figures do not depend on BM25's b, on stemming, or on hash
// collisions of the hash embedder; semantic and hybrid rank the gold turns the same way.
// A turn of conv-B ("Bob told me about his violin, violin, violin lessons") would take rank 1
// for conv A/1's violin question if recall leaked across agents.
const BASELINE = {
  name: 'bm25-inprocess',
  recallAt1: 0.4375,
  recallAt5: 0.875,
  recallAt10: 0.875,
  hitAt10: 0.875,
  mrr: 0.6667,
};
const MNEMO = {
  recallAt1: 0.6875,
  recallAt5: 0.875,
  recallAt10: 0.875,
  hitAt10: 0.875,
  mrr: 0.8125,
};
// MRR: .8125 / .6667 is 1.21875 exactly, 1.2187499… in floating point, so 1.2187 when rounded.
const VS_BASELINE = { recallAt1: 1.5714, recallAt5: 1, recallAt10: 1, hitAt10: 1, mrr: 1.2187 };

describe('pnpm bench recall, end to end on the fixture', () => {
  it('lexical on DuckDB :memory: gives the exact figures, against the baseline', async () => {
    const { code, json, stderr, stdout } = await bench('--data', fixture, '--in-memory');
    expect(code).toBe(0);
    expect(stdout).toHaveLength(1);
    expect(json).toMatchObject({
      bench: 'recall',
      store: 'duckdb',
      strategy: 'lexical',
      embedder: 'noop',
      questions: 8,
      ...MNEMO,
      baseline: BASELINE,
      vsBaseline: VS_BASELINE,
      byCategory: {
        '1': { questions: 2, recallAt10: 1, mrr: 1, baselineRecallAt10: 1, baselineMrr: 1 },
        '2': { questions: 2, recallAt10: 1, mrr: 1, baselineRecallAt10: 1, baselineMrr: 1 },
        '3': { questions: 1, recallAt10: 1, mrr: 1, baselineRecallAt10: 1, baselineMrr: 0.5 },
        '4': {
          questions: 3,
          recallAt10: 0.6667,
          mrr: 0.5,
          baselineRecallAt10: 0.6667,
          baselineMrr: 0.2778,
        },
      },
      runs: 1,
      rankingsStable: true,
      ingest: { conversations: 2, turns: 15, records: 15, deduplicated: 0 },
      loader: {
        samples: 2,
        questionsInFile: 10,
        excluded: { adversarial: 1, otherCategory: 0, noEvidence: 1, blankQuestion: 0 },
        evidence: { repaired: 3, dropped: 1 },
      },
      config: {
        limit: 10,
        embedderDimensions: 0,
        readAuditing: true,
        storeLocation: ':memory:',
        storeInfo: {},
      },
      data: { path: fixture, conversationsUsed: 2, conversationsInFile: 2 },
    });
    expect(json.p50Ms).toBeGreaterThan(0);
    expect(json.p95Ms).toBeGreaterThanOrEqual(json.p50Ms);
    expect(json.data.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(json.data.bytes).toBeGreaterThan(0);
    expect(Object.keys(json.machine)).toEqual(
      expect.arrayContaining(['cpuModel', 'cores', 'memoryGiB', 'node']),
    );
    expect(stderr.join('\n')).toMatch(
      /^\[ingest 1\/2\] conv A\/1: 12 turns → 12 records in \d+ ms$/m,
    );
    expect(stderr.join('\n')).toMatch(/^MRR +0\.8125 +0\.6667 +1\.22x$/m);
    expect(stderr.join('\n')).toMatch(/^recall@1 +0\.6875 +0\.4375 +1\.57x$/m);
  });

  it('semantic and hybrid with the hash embedder give the exact figures', async () => {
    for (const strategy of ['semantic', 'hybrid']) {
      const { code, json } = await bench(
        '--data',
        fixture,
        '--in-memory',
        '--strategy',
        strategy,
        '--embedder',
        'hash',
      );
      expect(code).toBe(0);
      expect(json).toMatchObject({
        strategy,
        embedder: 'hash',
        questions: 8,
        ...MNEMO,
        baseline: BASELINE,
        vsBaseline: VS_BASELINE,
        config: { embedderDimensions: 384 },
      });
    }
  });

  it('--limit-conversations and --runs', async () => {
    const { code, json } = await bench(
      '--data',
      fixture,
      '--in-memory',
      '--limit-conversations',
      '1',
      '--runs',
      '3',
    );
    expect(code).toBe(0);
    // conv A/1 alone: recall@1 (0 + .5 + 1 + 1 + 1 + 0) / 6, MRR 4.5/6 (baseline 3.3333/6).
    expect(json).toMatchObject({
      questions: 6,
      recallAt1: 0.5833,
      mrr: 0.75,
      baseline: { mrr: 0.5556 },
      runs: 3,
      rankingsStable: true,
      ingest: { conversations: 1, turns: 12 },
      data: { conversationsUsed: 1, conversationsInFile: 2 },
    });
    expect(json.latency.perRunP50Ms).toHaveLength(3);
  });

  it('refuses semantic or hybrid recall with the noop embedder: the library error, exit 2', async () => {
    for (const strategy of ['semantic', 'hybrid']) {
      const { code, stdout, stderr } = await bench(
        '--data',
        fixture,
        '--in-memory',
        '--strategy',
        strategy,
      );
      expect(code).toBe(2);
      expect(stdout).toEqual([]);
      expect(stderr.at(-1)).toBe(
        `bench recall: EMBEDDER_NOT_CONFIGURED: ${strategy} recall needs a semantic embedder; the engine has the no-op embedder (use --embedder hash)`,
      );
    }
  });

  it('bad arguments and unusable data files: one line on stderr, exit 2', async () => {
    const cases: [string[], string][] = [
      [[], 'bench recall: --data <locomo.json> is required (see --help)'],
      [['--data', fixture, '--bogus'], "bench recall: Unknown option '--bogus'"],
      [['--data', fixture, 'extra'], 'bench recall: Unexpected argument'],
      [['--data'], "bench recall: Option '--data <value>' argument missing"],
      [['--data', ' '], 'bench recall: --data must not be empty (see --help)'],
      [
        ['--data', join(scratch, 'none.json')],
        `bench recall: --data: cannot read ${join(scratch, 'none.json')}: no such file; get LoCoMo from https://github.com/snap-research/locomo (data/locomo10.json, CC BY-NC 4.0) and pass its path with --data (see --help)`,
      ],
      [['--data', scratch], 'it is a directory'],
      [['--data', fixture, '--store', 'postgres'], '--store postgres needs --pg-url <url>'],
      [['--data', fixture, '--store', 'sqlite'], '--store must be one of duckdb, postgres'],
      [
        ['--data', fixture, '--pg-url', 'postgres://h/db'],
        '--pg-url applies to --store postgres only',
      ],
      [
        ['--data', fixture, '--store', 'postgres', '--pg-url', 'http://x'],
        '--pg-url must be a postgres://',
      ],
      [
        ['--data', fixture, '--strategy', 'auto'],
        '--strategy must be one of lexical, semantic, hybrid',
      ],
      [['--data', fixture, '--embedder', 'openai'], '--embedder must be one of noop, hash'],
      [['--data', fixture, '--runs', '0'], "--runs must be a positive integer, got '0'"],
      [
        ['--data', fixture, '--limit-conversations', '1.5'],
        '--limit-conversations must be a positive integer',
      ],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await bench(...args);
      expect({ args, code, stdout, lines: stderr.length }).toEqual({
        args,
        code: 2,
        stdout: [],
        lines: 1,
      });
      expect(stderr[0]).toContain(message);
    }
  });

  it('an unreachable PostgreSQL server: exit 1, the password masked', async () => {
    const { code, stdout, stderr } = await bench(
      '--data',
      fixture,
      '--store',
      'postgres',
      '--pg-url',
      'postgres://postgres:s3cret-pw@127.0.0.1:1/nowhere',
    );
    expect(code).toBe(1);
    expect(stdout).toEqual([]);
    expect(stderr.at(-1)).toMatch(/^bench recall: STORE_UNAVAILABLE: /);
    expect(stderr.join('\n')).not.toContain('s3cret-pw');
  });
});

describe('the built program (node apps/bench/dist/main.js)', () => {
  function run(args: string[], env: Record<string, string> = {}) {
    const result = spawnSync(process.execPath, [main, ...args], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, ...env },
    });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  it('dispatches recall: the JSON object is the last stdout line; the temp DuckDB file is removed', () => {
    const tmp = mkdtempSync(join(scratch, 'tmp-'));
    const { code, stdout, stderr } = run(['recall', '--data', fixture], { TMPDIR: tmp });
    expect(stderr).toContain('store: duckdb (temp file)');
    expect(code).toBe(0);
    const json = JSON.parse(stdout.trimEnd().split('\n').at(-1) as string);
    expect(json).toMatchObject({ bench: 'recall', questions: 8, ...MNEMO, baseline: BASELINE });
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('lists the benchmarks for an unknown or missing name, exit 2; --help exits 0', () => {
    expect(run(['throughput'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "bench: unknown benchmark 'throughput'; available: recall, remember, latency, plans, replay\n",
    });
    expect(run([])).toMatchObject({
      code: 2,
      stderr: 'bench: name a benchmark; available: recall, remember, latency, plans, replay\n',
    });
    expect(run(['--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('recall ') });
    expect(run(['recall', '--help'])).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('--limit-conversations'),
    });
  });
});

describe.skipIf(PG_URL === undefined)('on PostgreSQL (MNEMO_TEST_PG_URL)', () => {
  async function schemaExists(name: string): Promise<boolean> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [
        name,
      ]);
      return rowCount === 1;
    } finally {
      await client.end();
    }
  }

  it('gives the same figures as DuckDB and drops its schema', async () => {
    const lexical = await bench(
      '--data',
      fixture,
      '--store',
      'postgres',
      '--pg-url',
      PG_URL as string,
    );
    expect(lexical.code).toBe(0);
    expect(lexical.json).toMatchObject({
      store: 'postgres',
      questions: 8,
      ...MNEMO,
      baseline: BASELINE,
    });
    const hybrid = await bench(
      ...['--data', fixture, '--store', 'postgres', '--pg-url', PG_URL as string],
      ...['--strategy', 'hybrid', '--embedder', 'hash'],
    );
    expect(hybrid.code).toBe(0);
    expect(hybrid.json).toMatchObject({ store: 'postgres', questions: 8, ...MNEMO });
    for (const { json } of [lexical, hybrid]) {
      const schema = String(json.config.storeLocation).replace(/^schema /, '');
      expect(schema).toMatch(/^mnemo_bench_[a-z0-9]+_[0-9a-f]{8}$/);
      expect(await schemaExists(schema)).toBe(false);
    }
  });
});
