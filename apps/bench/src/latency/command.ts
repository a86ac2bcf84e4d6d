import { runCommand } from '../remember/command.js';
import { booleanFlag, parseFlags, positiveInteger, stringFlag } from '../shared/args.js';
import { UsageError } from '../shared/errors.js';
import { formatTable, jsonLine, type Output } from '../shared/output.js';
import { ratio, round } from '../shared/stats.js';
import { parseStoreTarget, withSearchIndexes } from '../shared/stores.js';
import { DEFAULT_LOCOMO } from '../shared/workload.js';
import {
  BROAD_FILTER,
  DIMENSIONS,
  LATENCY_LANES,
  type LatencyBenchOptions,
  type LatencyBenchResult,
  LIMIT,
  LOAD_BATCH,
  LOADED_MEMORY_TYPES,
  LOADED_TOPICS,
  QUERIES,
  runLatencyBench,
  TAG_FILTER,
  WARMUP,
} from './run.js';

export const LATENCY_USAGE = `Usage: pnpm bench latency --records <N> [options]

Recall latency at scale: loads N records (LoCoMo turns, repeated with the
suffix " #<i>"; one agent; memory types ${LOADED_MEMORY_TYPES.join(', ')} in
turn, and tags topic-0 to topic-${LOADED_TOPICS - 1} in turn, one each) into a fresh store with rememberMany (chunks of ${LOAD_BATCH}, hash embedder
${DIMENSIONS} d), then times ${QUERIES} recalls (limit ${LIMIT}) per lane with LoCoMo
questions, after ${WARMUP} untimed ones: lexical, semantic and hybrid without
filters, lexical filtered on memory types ${BROAD_FILTER.memoryTypes.join(' and ')} (two
records in three pass), and lexical filtered on the tag ${TAG_FILTER.tagsAny[0]} (one
record in ${LOADED_TOPICS}). The
baseline, same run: the in-process BM25 of 'bench recall' over the same N
texts, timed per query with the same questions.

Options:
  --records <N>              records to load (required)
  --queries <n>              timed recalls per lane (default ${QUERIES})
  --data <file>              a LoCoMo file (default ${DEFAULT_LOCOMO})
  --store duckdb|postgres    the store (default duckdb: a temp file, deleted afterwards)
  --pg-url <url>             with --store postgres: postgres://user:pw@host:port/db
                             (a new schema, dropped afterwards)
  --lexical-index memory|sql with --store postgres: the store's lexicalIndex
                             (default memory: postings held in the process)
  --vector-index memory|sql  with --store postgres: the store's vectorIndex
                             (default memory: vector codes held in the process)
  -h, --help                 show this help

Output: progress and a table on stderr; one JSON object as the last line of stdout.
Exit codes: 0 done, 2 bad arguments or data file, 1 anything else.`;

const FLAGS = {
  records: { type: 'string' },
  queries: { type: 'string' },
  data: { type: 'string' },
  store: { type: 'string' },
  'pg-url': { type: 'string' },
  'lexical-index': { type: 'string' },
  'vector-index': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type LatencyArgs =
  | { help: true }
  | ({ help: false } & Omit<LatencyBenchOptions, 'progress'> & { queries: number });

/** Parses the flags of `bench latency`; throws `UsageError`. */
export function parseLatencyArgs(argv: readonly string[]): LatencyArgs {
  const values = parseFlags(argv, FLAGS);
  if (booleanFlag(values, 'help')) return { help: true };
  const records = stringFlag(values, 'records');
  if (records === undefined) throw new UsageError('--records <N> is required');
  return {
    help: false,
    records: positiveInteger('--records', records, 1),
    queries: positiveInteger('--queries', stringFlag(values, 'queries'), QUERIES),
    dataPath: stringFlag(values, 'data') ?? DEFAULT_LOCOMO,
    store: withSearchIndexes(values, parseStoreTarget(values)),
  };
}

/** The JSON line: milliseconds to 3 decimals, ratios to 4. */
export function summarizeLatency(r: LatencyBenchResult) {
  const ms = (v: number) => round(v, 3);
  const s = r.strategies;
  const base = r.baseline;
  const ratioOrNull = (a: number, b: number) => {
    const v = ratio(a, b);
    return v === null ? null : round(v, 4);
  };
  return {
    bench: r.bench,
    store: r.store,
    records: r.records,
    queries: r.queries,
    lexicalP50Ms: ms(s.lexical.p50Ms),
    semanticP50Ms: ms(s.semantic.p50Ms),
    hybridP50Ms: ms(s.hybrid.p50Ms),
    lexicalP95Ms: ms(s.lexical.p95Ms),
    semanticP95Ms: ms(s.semantic.p95Ms),
    hybridP95Ms: ms(s.hybrid.p95Ms),
    lexicalFilteredP50Ms: ms(s.lexicalFiltered.p50Ms),
    lexicalFilteredP95Ms: ms(s.lexicalFiltered.p95Ms),
    lexicalTaggedP50Ms: ms(s.lexicalTagged.p50Ms),
    lexicalTaggedP95Ms: ms(s.lexicalTagged.p95Ms),
    baseline: {
      name: base.name,
      p50Ms: ms(base.p50Ms),
      p95Ms: ms(base.p95Ms),
      meanMs: ms(base.meanMs),
      maxMs: ms(base.maxMs),
      buildMs: round(base.buildMs, 2),
    },
    vsBaseline: {
      lexicalP50: ratioOrNull(s.lexical.p50Ms, base.p50Ms),
      lexicalP95: ratioOrNull(s.lexical.p95Ms, base.p95Ms),
    },
    strategies: Object.fromEntries(
      LATENCY_LANES.map((name) => [
        name,
        {
          p50Ms: ms(s[name].p50Ms),
          p95Ms: ms(s[name].p95Ms),
          meanMs: ms(s[name].meanMs),
          maxMs: ms(s[name].maxMs),
          meanHits: round(s[name].meanHits, 2),
          firstMs: ms(s[name].firstMs),
        },
      ]),
    ),
    load: { ...r.load, ms: round(r.load.ms, 2), initMs: round(r.load.initMs, 2) },
    config: {
      embedder: `hash, ${DIMENSIONS} dimensions`,
      limit: LIMIT,
      warmup: WARMUP,
      loadBatch: LOAD_BATCH,
      agents: 1,
      readAuditing: true,
      storeInfo: r.storeInfo,
    },
    totalMs: round(r.totalMs, 2),
    machine: r.machine,
    data: r.data,
  };
}

export function formatLatencyTable(r: LatencyBenchResult): string[] {
  const row = (name: string, l: { p50Ms: number; p95Ms: number; meanMs: number }) => [
    name,
    l.p50Ms.toFixed(2),
    l.p95Ms.toFixed(2),
    l.meanMs.toFixed(2),
  ];
  return [
    '',
    `latency: ${r.store}, ${r.records} records, ${r.queries} recalls per lane`,
    ...formatTable([
      ['lane', 'p50 ms', 'p95 ms', 'mean ms'],
      ...LATENCY_LANES.map((name) => row(`mnemo ${name}`, r.strategies[name])),
      row('BM25 in-process (baseline)', r.baseline),
    ]),
    `load: ${r.load.records} records in ${(r.load.ms / 1000).toFixed(2)} s; reopened in ${(r.load.initMs / 1000).toFixed(2)} s; total ${(r.totalMs / 1000).toFixed(2)} s`,
    '',
  ];
}

export async function latencyCommand(argv: readonly string[], output: Output): Promise<number> {
  return runCommand('latency', output, async (setTarget) => {
    const args = parseLatencyArgs(argv);
    if (args.help) {
      output.out(LATENCY_USAGE);
      return;
    }
    setTarget(args.store);
    const result = await runLatencyBench({ ...args, progress: output.err });
    for (const line of formatLatencyTable(result)) output.err(line);
    output.out(jsonLine(summarizeLatency(result)));
  });
}
