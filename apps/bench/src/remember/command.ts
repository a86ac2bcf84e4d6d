import { MnemoError } from '@mnemo/core';
import { booleanFlag, parseFlags, positiveInteger, stringFlag } from '../shared/args.js';
import { errorMessage, UsageError } from '../shared/errors.js';
import { formatTable, jsonLine, type Output } from '../shared/output.js';
import { ratio, round } from '../shared/stats.js';
import { parseStoreTarget, redactPassword, type StoreTarget } from '../shared/stores.js';
import { DEFAULT_LOCOMO } from '../shared/workload.js';
import { ONE_ROW_TRANSACTION, RAW_CHUNK } from './raw.js';
import {
  BATCH_SIZE,
  CONCURRENCY,
  DIMENSIONS,
  type RememberBenchOptions,
  type RememberBenchResult,
  runRememberBench,
  SEQUENTIAL_LIMIT,
} from './run.js';

export const REMEMBER_USAGE = `Usage: pnpm bench remember --n <N> [options]

Write throughput: N records (LoCoMo turns, repeated with the suffix " #<i>")
written by mnemo in three modes, each into a fresh store — one remember at a
time (only the first ${SEQUENTIAL_LIMIT} are written and timed), ${CONCURRENCY} remember calls in
flight, rememberMany in chunks of ${BATCH_SIZE} — with the hash embedder (${DIMENSIONS} d);
and, in the same run, the raw driver writing the same texts and vectors to a
plain table: one-row transactions (first ${SEQUENTIAL_LIMIT}) and its fastest bulk path.

Options:
  --n <N>                    records to write (required)
  --data <file>              a LoCoMo file (default ${DEFAULT_LOCOMO})
  --store duckdb|postgres    the store (default duckdb: temp files, deleted afterwards)
  --pg-url <url>             with --store postgres: postgres://user:pw@host:port/db
                             (new schemas, dropped afterwards)
  --no-vector-dimensions     open the stores without vectorDimensions, as the
                             set-ups in the READMEs do (the first embedding
                             stored fixes the size)
  --embed-latency <ms>       the embedder answers each call (a batch of up to
                             64 texts) <ms> later, as a model server would
                             (default: at once)
  -h, --help                 show this help

Output: progress and a table on stderr; one JSON object as the last line of stdout.
Exit codes: 0 done, 2 bad arguments or data file, 1 anything else.`;

const FLAGS = {
  n: { type: 'string' },
  data: { type: 'string' },
  store: { type: 'string' },
  'pg-url': { type: 'string' },
  'no-vector-dimensions': { type: 'boolean' },
  'embed-latency': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type RememberArgs =
  | { help: true }
  | ({ help: false } & Omit<RememberBenchOptions, 'progress'>);

/** Parses the flags of `bench remember`; throws `UsageError`. */
export function parseRememberArgs(argv: readonly string[]): RememberArgs {
  const values = parseFlags(argv, FLAGS);
  if (booleanFlag(values, 'help')) return { help: true };
  const n = stringFlag(values, 'n');
  if (n === undefined) throw new UsageError('--n <N> is required');
  return {
    help: false,
    n: positiveInteger('--n', n, 1),
    dataPath: stringFlag(values, 'data') ?? DEFAULT_LOCOMO,
    store: parseStoreTarget(values),
    vectorDimensions: !booleanFlag(values, 'no-vector-dimensions'),
    embedLatencyMs: positiveInteger('--embed-latency', stringFlag(values, 'embed-latency'), 0),
  };
}

/** The JSON line: rates to 1 decimal, ratios to 4, milliseconds to 2. */
export function summarizeRemember(r: RememberBenchResult) {
  const r1 = (v: number) => round(v, 1);
  const r4 = (v: number | null) => (v === null ? null : round(v, 4));
  return {
    bench: r.bench,
    store: r.store,
    n: r.n,
    sequentialPerSec: r1(r.sequential.perSec),
    concurrentPerSec: r1(r.concurrent.perSec),
    batchPerSec: r1(r.batch.perSec),
    rawSequentialPerSec: r1(r.raw.sequentialPerSec),
    rawBatchPerSec: r1(r.raw.batchPerSec),
    ratios: {
      sequentialVsRawSequential: r4(ratio(r.sequential.perSec, r.raw.sequentialPerSec)),
      concurrentVsRawSequential: r4(ratio(r.concurrent.perSec, r.raw.sequentialPerSec)),
      batchVsRawBatch: r4(ratio(r.batch.perSec, r.raw.batchPerSec)),
    },
    records: {
      sequential: r.sequential.records,
      concurrent: r.concurrent.records,
      batch: r.batch.records,
      rawSequential: r.raw.sequentialRows,
      rawBatch: r.raw.batchRows,
    },
    ms: {
      sequential: round(r.sequential.ms, 2),
      concurrent: round(r.concurrent.ms, 2),
      batch: round(r.batch.ms, 2),
      rawSequential: round(r.raw.sequentialMs, 2),
      rawBatch: round(r.raw.batchMs, 2),
    },
    embedPerSec: r1(r.embedPerSec),
    config: {
      embedder: `hash, ${DIMENSIONS} dimensions`,
      embedLatencyMs: r.embedLatencyMs,
      sequentialLimit: SEQUENTIAL_LIMIT,
      concurrency: CONCURRENCY,
      batchSize: BATCH_SIZE,
      rawChunk: RAW_CHUNK,
      rawSequentialMethod: ONE_ROW_TRANSACTION,
      rawBatchMethod: r.raw.batchMethod,
      rawVectorType: r.raw.vectorType,
      storeVectorDimensions: r.vectorDimensions ? DIMENSIONS : null,
      storeInfo: r.storeInfo,
    },
    totalMs: round(r.totalMs, 2),
    machine: r.machine,
    data: r.data,
  };
}

export function formatRememberTable(r: RememberBenchResult): string[] {
  const row = (mode: string, records: number, ms: number, rate: number) => [
    mode,
    String(records),
    (ms / 1000).toFixed(2),
    rate.toFixed(0),
  ];
  return [
    '',
    `remember: ${r.store}, ${r.n} records, hash embedder ${DIMENSIONS} d`,
    ...formatTable([
      ['mode', 'records', 's', 'records/s'],
      row('mnemo remember, sequential', r.sequential.records, r.sequential.ms, r.sequential.perSec),
      row(
        `mnemo remember, ${CONCURRENCY} in flight`,
        r.concurrent.records,
        r.concurrent.ms,
        r.concurrent.perSec,
      ),
      row(`mnemo rememberMany ×${BATCH_SIZE}`, r.batch.records, r.batch.ms, r.batch.perSec),
      row(
        'raw one-row transactions',
        r.raw.sequentialRows,
        r.raw.sequentialMs,
        r.raw.sequentialPerSec,
      ),
      row('raw bulk', r.raw.batchRows, r.raw.batchMs, r.raw.batchPerSec),
    ]),
    `hash embedding alone: ${r.embedPerSec.toFixed(0)} texts/s; total ${(r.totalMs / 1000).toFixed(2)} s`,
    '',
  ];
}

export async function rememberCommand(argv: readonly string[], output: Output): Promise<number> {
  return runCommand('remember', output, async (setTarget) => {
    const args = parseRememberArgs(argv);
    if (args.help) {
      output.out(REMEMBER_USAGE);
      return;
    }
    setTarget(args.store);
    const result = await runRememberBench({ ...args, progress: output.err });
    for (const line of formatRememberTable(result)) output.err(line);
    output.out(jsonLine(summarizeRemember(result)));
  });
}

/** Shared error handling of the write and latency commands: exit 2 for `UsageError`, else 1. */
export async function runCommand(
  name: string,
  output: Output,
  body: (setTarget: (target: StoreTarget) => void) => Promise<void>,
): Promise<number> {
  let target: StoreTarget | undefined;
  try {
    await body((t) => {
      target = t;
    });
    return 0;
  } catch (error) {
    const message = redactPassword(errorMessage(error), target);
    if (error instanceof UsageError) {
      output.err(`bench ${name}: ${message} (see --help)`);
      return 2;
    }
    const code = MnemoError.isInstance(error) ? `${error.code}: ` : '';
    output.err(`bench ${name}: ${code}${message}`);
    return 1;
  }
}
