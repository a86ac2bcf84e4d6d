import { describe, expect, it } from 'vitest';
import { main } from '../src/dispatch.js';
import { parsePlansArgs, plansCommand } from '../src/plans/command.js';
import { makePlanWorkload, seededRandom, token, ZipfSampler } from '../src/plans/workload.js';
import { memoryOutput } from '../src/shared/output.js';

const PG_URL = process.env.MNEMO_TEST_PG_URL;

async function run(...args: string[]) {
  const output = memoryOutput();
  const code = await plansCommand(args, output);
  const last = output.stdout.at(-1);
  return {
    code,
    stderr: output.stderr,
    // biome-ignore lint/suspicious/noExplicitAny: the JSON line, checked field by field
    json: (code === 0 && last !== undefined ? JSON.parse(last) : undefined) as any,
  };
}

describe('bench plans: workload', () => {
  it('is seeded: the same seed gives the same plans and queries', () => {
    expect(makePlanWorkload(50, 10, 7)).toEqual(makePlanWorkload(50, 10, 7));
    expect(makePlanWorkload(50, 10, 7)).not.toEqual(makePlanWorkload(50, 10, 8));
  });

  it('draws 3-20 distinct tokens of at least 3 characters, rank 0 the most often', () => {
    const { plans } = makePlanWorkload(2000, 0, 1);
    for (const plan of plans) {
      const tokens = plan.query.split(' ');
      expect(new Set(tokens).size).toBe(tokens.length);
      expect(tokens.length).toBeGreaterThanOrEqual(3);
      expect(tokens.length).toBeLessThanOrEqual(20);
      expect(tokens.every((t) => t.length >= 3)).toBe(true);
      expect(plan.outcomeScore).toBeGreaterThanOrEqual(0.5);
    }
    const sampler = new ZipfSampler(50_000, seededRandom(3));
    const counts = new Map<number, number>();
    for (let i = 0; i < 20_000; i += 1) {
      const rank = sampler.next();
      counts.set(rank, (counts.get(rank) ?? 0) + 1);
    }
    // P(rank 0) = 1 / H(50000) ≈ 0.088; P(rank 9) ≈ 0.0088.
    expect((counts.get(0) ?? 0) / 20_000).toBeCloseTo(0.088, 1);
    expect(counts.get(0) ?? 0).toBeGreaterThan(5 * (counts.get(9) ?? 0));
    expect(token(0)).toBe('w000');
  });
});

describe('bench plans: arguments', () => {
  it('parses --plans, --queries, --scan-queries, --seed, --store and --pg-url', () => {
    expect(parsePlansArgs(['--plans', '100'])).toEqual({
      help: false,
      plans: 100,
      queries: 200,
      scanQueries: 10,
      seed: 20261130,
      store: { kind: 'duckdb' },
    });
    expect(
      parsePlansArgs([
        '--plans',
        '9',
        '--queries',
        '3',
        '--scan-queries',
        '2',
        '--seed',
        '5',
        '--store',
        'postgres',
        '--pg-url',
        'postgres://h/d',
      ]),
    ).toMatchObject({
      plans: 9,
      queries: 3,
      scanQueries: 2,
      seed: 5,
      store: { kind: 'postgres', url: 'postgres://h/d' },
    });
    expect(parsePlansArgs(['--help'])).toEqual({ help: true });
  });

  it.each([
    [[]],
    [['--plans', '0']],
    [['--plans', '10', '--queries', 'x']],
    [['--plans', '10', '--store', 'postgres']],
    [['--plans', '10', '--records', '3']],
  ])('rejects %j with exit code 2', async (argv) => {
    const result = await run(...argv);
    expect(result.code).toBe(2);
    expect(result.stderr.at(-1)).toMatch(/^bench plans: .*\(see --help\)$/);
  });

  it('is listed by the dispatcher', async () => {
    const output = memoryOutput();
    expect(await main(['--help'], output)).toBe(0);
    expect(output.stdout.join('\n')).toMatch(/plans +plan lookup/);
  });
});

function expectPlansJson(json: Record<string, unknown>, store: string) {
  expect(json).toMatchObject({
    bench: 'plans',
    store,
    plans: 300,
    queries: 40,
    identical: true,
    mismatches: 0,
    fill: { storedRecords: 300 },
    scan: { queries: 3, plansFetched: 300 },
  });
  for (const key of ['indexedP50Ms', 'indexedP99Ms', 'scanP50Ms', 'speedup', 'auditedP50Ms']) {
    expect(json[key], key).toBeGreaterThan(0);
  }
  expect(json.hits).toBeGreaterThan(10);
}

describe('bench plans: end to end', () => {
  it('on DuckDB: 300 plans, every indexed answer equals the scan', async () => {
    const result = await run('--plans', '300', '--queries', '40', '--scan-queries', '3');
    expect(result.code, result.stderr.join('\n')).toBe(0);
    expectPlansJson(result.json, 'duckdb');
  }, 120_000);

  it.skipIf(PG_URL === undefined)(
    'on PostgreSQL',
    async () => {
      const result = await run(
        '--plans',
        '300',
        '--queries',
        '40',
        '--scan-queries',
        '3',
        '--store',
        'postgres',
        '--pg-url',
        PG_URL as string,
      );
      expect(result.code, result.stderr.join('\n')).toBe(0);
      expectPlansJson(result.json, 'postgres');
    },
    120_000,
  );
});
