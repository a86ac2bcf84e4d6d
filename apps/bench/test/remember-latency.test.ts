import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../src/dispatch.js';
import { latencyCommand, parseLatencyArgs } from '../src/latency/command.js';
import { parseRememberArgs, rememberCommand } from '../src/remember/command.js';
import { memoryOutput, type Output } from '../src/shared/output.js';
import { DEFAULT_LOCOMO, makeTexts, spread } from '../src/shared/workload.js';

const fixture = fileURLToPath(new URL('fixtures/locomo-tiny.json', import.meta.url));
const PG_URL = process.env.MNEMO_TEST_PG_URL;
const LOCOMO_SOURCE =
  'get LoCoMo from https://github.com/snap-research/locomo (data/locomo10.json, CC BY-NC 4.0) and pass its path with --data';

async function run(
  command: (argv: readonly string[], output: Output) => Promise<number>,
  ...args: string[]
) {
  const output = memoryOutput();
  const code = await command(args, output);
  const last = output.stdout.at(-1);
  return {
    code,
    stderr: output.stderr,
    // biome-ignore lint/suspicious/noExplicitAny: the JSON line, checked field by field
    json: (code === 0 && last !== undefined ? JSON.parse(last) : undefined) as any,
  };
}

describe('workload', () => {
  it('repeats the turns with a distinct suffix per record', () => {
    expect(makeTexts(['a', 'b'], 5)).toEqual(['a #0', 'b #1', 'a #2', 'b #3', 'a #4']);
    expect(new Set(makeTexts(['x'], 100)).size).toBe(100);
  });
  it('spreads picks over the list, cycling when it is short', () => {
    expect(spread([1, 2, 3, 4], 2)).toEqual([1, 3]);
    expect(spread([1, 2], 5)).toEqual([1, 2, 1, 2, 1]);
  });
});

describe('bench remember: arguments', () => {
  it('parses --n, --data, --store, --pg-url, --no-vector-dimensions and --embed-latency', () => {
    expect(parseRememberArgs(['--n', '50'])).toEqual({
      help: false,
      n: 50,
      dataPath: DEFAULT_LOCOMO,
      store: { kind: 'duckdb' },
      vectorDimensions: true,
      embedLatencyMs: 0,
    });
    expect(
      parseRememberArgs([
        '--',
        '--n',
        '7',
        '--data',
        'x.json',
        '--store',
        'postgres',
        '--pg-url',
        'postgres://u:p@h:1/d',
        '--no-vector-dimensions',
        '--embed-latency',
        '10',
      ]),
    ).toEqual({
      help: false,
      n: 7,
      dataPath: 'x.json',
      store: { kind: 'postgres', url: 'postgres://u:p@h:1/d' },
      vectorDimensions: false,
      embedLatencyMs: 10,
    });
    expect(parseRememberArgs(['-h'])).toEqual({ help: true });
  });

  it.each([
    [[]],
    [['--n', '0']],
    [['--n', 'ten']],
    [['--n', '5', '--store', 'sqlite']],
    [['--n', '5', '--store', 'postgres']],
    [['--n', '5', '--store', 'postgres', '--pg-url', 'http://x']],
    [['--n', '5', '--pg-url', 'postgres://h/d']],
    [['--n', '5', '--records', '3']],
    [['--n', '5', 'extra']],
    [['--n', '5', '--embed-latency', '0']],
    [['--n', '5', '--embed-latency', 'slow']],
  ])('rejects %j with exit code 2', async (argv) => {
    const result = await run(rememberCommand, ...argv);
    expect(result.code).toBe(2);
    expect(result.stderr.at(-1)).toMatch(/^bench remember: .*\(see --help\)$/);
  });

  it('exits 2 for a data file that is not there, saying where to get the data', async () => {
    const result = await run(rememberCommand, '--n', '5', '--data', '/nonexistent/locomo.json');
    expect(result.code).toBe(2);
    expect(result.stderr).toEqual([
      `bench remember: --data: cannot read /nonexistent/locomo.json: no such file; ${LOCOMO_SOURCE} (see --help)`,
    ]);
  });
});

describe('bench latency: arguments', () => {
  it('parses --records, --queries, --data, --store and --pg-url', () => {
    expect(parseLatencyArgs(['--records', '100'])).toEqual({
      help: false,
      records: 100,
      queries: 200,
      dataPath: DEFAULT_LOCOMO,
      store: { kind: 'duckdb' },
    });
    expect(
      parseLatencyArgs([
        '--records',
        '9',
        '--queries',
        '3',
        '--store',
        'postgres',
        '--pg-url',
        'postgresql://h/d',
      ]),
    ).toMatchObject({
      records: 9,
      queries: 3,
      store: { kind: 'postgres', url: 'postgresql://h/d' },
    });
  });

  it('parses --lexical-index and --vector-index, for PostgreSQL', () => {
    const postgres = ['--records', '9', '--store', 'postgres', '--pg-url', 'postgres://h/d'];
    expect(parseLatencyArgs(postgres)).toMatchObject({
      store: {
        kind: 'postgres',
        url: 'postgres://h/d',
        lexicalIndex: 'memory',
        vectorIndex: 'memory',
      },
    });
    expect(
      parseLatencyArgs([...postgres, '--lexical-index', 'sql', '--vector-index', 'memory']),
    ).toMatchObject({
      store: {
        kind: 'postgres',
        url: 'postgres://h/d',
        lexicalIndex: 'sql',
        vectorIndex: 'memory',
      },
    });
    expect(parseLatencyArgs([...postgres, '--vector-index', 'sql'])).toMatchObject({
      store: { lexicalIndex: 'memory', vectorIndex: 'sql' },
    });
  });

  it.each([
    [['--lexical-index', 'sql'], '--lexical-index applies to --store postgres only'],
    [['--vector-index', 'memory'], '--vector-index applies to --store postgres only'],
    [
      ['--store', 'postgres', '--pg-url', 'postgres://h/d', '--lexical-index', 'disk'],
      "--lexical-index must be one of memory, sql, got 'disk'",
    ],
  ])('rejects %j: %s', async (flags, message) => {
    const result = await run(latencyCommand, '--records', '10', ...flags);
    expect(result.code).toBe(2);
    expect(result.stderr.at(-1)).toBe(`bench latency: ${message} (see --help)`);
  });

  it.each([
    [[]],
    [['--records', '-1']],
    [['--records', '10', '--queries', '0']],
    [['--records', '10', '--store', 'postgres']],
    [['--records', '10', '--n', '3']],
  ])('rejects %j with exit code 2', async (argv) => {
    const result = await run(latencyCommand, ...argv);
    expect(result.code).toBe(2);
    expect(result.stderr.at(-1)).toMatch(/^bench latency: .*\(see --help\)$/);
  });

  it('exits 2 for a data file that is not there, saying where to get the data', async () => {
    const result = await run(latencyCommand, '--records', '5', '--data', '/nonexistent/l.json');
    expect(result.code).toBe(2);
    expect(result.stderr).toEqual([
      `bench latency: --data: cannot read /nonexistent/l.json: no such file; ${LOCOMO_SOURCE} (see --help)`,
    ]);
  });
});

describe('dispatcher', () => {
  it('lists the new benchmarks', async () => {
    const output = memoryOutput();
    expect(await main(['--help'], output)).toBe(0);
    expect(output.stdout.join('\n')).toMatch(/remember .*\n.*latency /);
  });
});

function expectRememberJson(json: Record<string, unknown>, store: string, n: number) {
  expect(json).toMatchObject({
    bench: 'remember',
    store,
    n,
    records: { sequential: n, concurrent: n, batch: n, rawSequential: n, rawBatch: n },
    config: { rawSequentialMethod: 'a prepared INSERT per row, each committing on its own' },
  });
  for (const key of [
    'sequentialPerSec',
    'concurrentPerSec',
    'batchPerSec',
    'rawSequentialPerSec',
    'rawBatchPerSec',
  ]) {
    expect(json[key], key).toBeGreaterThan(0);
  }
  expect(Object.keys(json.ratios as object).sort()).toEqual([
    'batchVsRawBatch',
    'concurrentVsRawSequential',
    'sequentialVsRawSequential',
  ]);
  expect(json.machine).toMatchObject({ cores: expect.any(Number), node: process.version });
  expect(json.data).toMatchObject({
    path: fixture,
    sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
  });
}

function expectLatencyJson(
  json: Record<string, unknown>,
  store: string,
  records: number,
  storeInfo: Record<string, unknown> = {},
) {
  expect(json).toMatchObject({
    bench: 'latency',
    store,
    records,
    queries: 20,
    load: { records, storedRecords: records, initMs: expect.any(Number) },
    baseline: { name: 'bm25-inprocess' },
    config: { storeInfo },
  });
  const lanes = json.strategies as Record<string, { firstMs: number }>;
  expect(Object.keys(lanes)).toEqual([
    'lexical',
    'semantic',
    'hybrid',
    'lexicalFiltered',
    'lexicalTagged',
  ]);
  for (const lane of Object.keys(lanes)) {
    for (const p of ['P50Ms', 'P95Ms']) {
      expect(json[`${lane}${p}`], `${lane}${p}`).toBeGreaterThan(0);
    }
    expect(lanes[lane]?.firstMs, `${lane} firstMs`).toBeGreaterThan(0);
  }
  expect(json.vsBaseline).toMatchObject({ lexicalP50: expect.any(Number) });
}

describe('bench remember and latency: end to end on DuckDB', () => {
  it('remember --n 50: every mode writes exactly 50 records', async () => {
    const result = await run(rememberCommand, '--n', '50', '--data', fixture);
    expect(result.code, result.stderr.join('\n')).toBe(0);
    expectRememberJson(result.json, 'duckdb', 50);
    expect(result.json.config).toMatchObject({ storeVectorDimensions: 384 });
    expect(result.stderr.some((line) => line.includes('store holds 50'))).toBe(true);
  }, 120_000);

  it('remember --n 50 --no-vector-dimensions: the stores are opened without a size', async () => {
    const result = await run(
      rememberCommand,
      '--n',
      '50',
      '--data',
      fixture,
      '--no-vector-dimensions',
    );
    expect(result.code, result.stderr.join('\n')).toBe(0);
    expectRememberJson(result.json, 'duckdb', 50);
    expect(result.json.config).toMatchObject({ storeVectorDimensions: null });
  }, 120_000);

  it('remember --n 50 --embed-latency 5: the embedder answers each batch 5 ms later', async () => {
    const result = await run(
      rememberCommand,
      '--n',
      '50',
      '--data',
      fixture,
      '--embed-latency',
      '5',
    );
    expect(result.code, result.stderr.join('\n')).toBe(0);
    expectRememberJson(result.json, 'duckdb', 50);
    expect(result.json.config).toMatchObject({ embedLatencyMs: 5 });
    // Each of the 50 remembers one at a time waits for its own 5 ms embedding.
    expect(result.json.ms.sequential).toBeGreaterThanOrEqual(50 * 5);
  }, 120_000);

  it('latency --records 100: the store holds exactly 100 records', async () => {
    const result = await run(
      latencyCommand,
      '--records',
      '100',
      '--queries',
      '20',
      '--data',
      fixture,
    );
    expect(result.code, result.stderr.join('\n')).toBe(0);
    expectLatencyJson(result.json, 'duckdb', 100);
  }, 120_000);
});

describe.skipIf(PG_URL === undefined)(
  'bench remember and latency: end to end on PostgreSQL',
  () => {
    it('remember --n 50', async () => {
      const result = await run(
        rememberCommand,
        '--n',
        '50',
        '--data',
        fixture,
        '--store',
        'postgres',
        '--pg-url',
        PG_URL as string,
      );
      expect(result.code, result.stderr.join('\n')).toBe(0);
      expectRememberJson(result.json, 'postgres', 50);
    }, 120_000);

    it('latency --records 100', async () => {
      const result = await run(
        latencyCommand,
        '--records',
        '100',
        '--queries',
        '20',
        '--data',
        fixture,
        '--store',
        'postgres',
        '--pg-url',
        PG_URL as string,
      );
      expect(result.code, result.stderr.join('\n')).toBe(0);
      expectLatencyJson(result.json, 'postgres', 100, {
        serverVersion: expect.any(String),
        lexicalIndex: 'memory',
        vectorIndex: 'memory',
      });
    }, 120_000);

    it('latency --records 100, searching in SQL', async () => {
      const result = await run(
        latencyCommand,
        ...['--records', '100', '--queries', '20', '--data', fixture],
        ...['--store', 'postgres', '--pg-url', PG_URL as string],
        ...['--lexical-index', 'sql', '--vector-index', 'sql'],
      );
      expect(result.code, result.stderr.join('\n')).toBe(0);
      expectLatencyJson(result.json, 'postgres', 100, {
        serverVersion: expect.any(String),
        lexicalIndex: 'sql',
        vectorIndex: 'sql',
      });
    }, 120_000);
  },
);
