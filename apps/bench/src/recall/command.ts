import { MnemoError } from '@mnemo/core';
import { booleanFlag, oneOf, parseFlags, positiveInteger, stringFlag } from '../shared/args.js';
import { errorMessage, UsageError } from '../shared/errors.js';
import { formatTable, jsonLine, type Output } from '../shared/output.js';
import { ratio, round } from '../shared/stats.js';
import type { RetrievalScores } from './metrics.js';
import {
  EMBEDDERS,
  HASH_DIMENSIONS,
  type RecallBenchOptions,
  type RecallBenchResult,
  runRecallBench,
  STRATEGIES,
} from './run.js';
import type { StoreChoice } from './stores.js';

export const RECALL_USAGE = `Usage: pnpm bench recall --data <locomo.json> [options]

The LoCoMo retrieval benchmark: stores every dialogue turn of each
conversation as a record (one agent per conversation), recalls with every
question of categories 1-4, and scores whether the question's evidence turns
come back: recall@1/5/10, hit@10, MRR, and recall latency. The baseline is a
plain BM25 over the same turns, computed in-process in the same run.

Options:
  --data <file>              a file in the LoCoMo format (required), e.g. locomo10.json
  --store duckdb|postgres    the store (default duckdb: a temp file, deleted afterwards)
  --pg-url <url>             with --store postgres: the server, postgres://user:pw@host:port/db
                             (the run uses a new schema and drops it afterwards)
  --in-memory                with --store duckdb: use :memory: instead of a temp file
  --strategy lexical|semantic|hybrid   recall strategy (default lexical)
  --embedder noop|hash       noop (default) or the deterministic hash embedder, ${HASH_DIMENSIONS} dims
  --limit-conversations <n>  only the first n conversations of the file
  --runs <n>                 repeat the query phase n times; latencies are medians (default 1)
  -h, --help                 show this help

Output: progress and a table on stderr; one JSON object as the last line of stdout.
Exit codes: 0 done, 2 bad arguments, data file or strategy/embedder pair, 1 anything else.`;

const FLAGS = {
  data: { type: 'string' },
  store: { type: 'string' },
  'pg-url': { type: 'string' },
  'in-memory': { type: 'boolean' },
  strategy: { type: 'string' },
  embedder: { type: 'string' },
  'limit-conversations': { type: 'string' },
  runs: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The parsed command line (`help` set means: print the usage, run nothing). */
export type RecallArgs = { help: true } | ({ help: false } & Omit<RecallBenchOptions, 'progress'>);

/** Parses the flags of `bench recall`; throws `UsageError`. */
export function parseRecallArgs(argv: readonly string[]): RecallArgs {
  const values = parseFlags(argv, FLAGS);
  if (booleanFlag(values, 'help')) return { help: true };
  const dataPath = stringFlag(values, 'data');
  if (dataPath === undefined) throw new UsageError('--data <locomo.json> is required');
  const kind = oneOf('--store', stringFlag(values, 'store'), ['duckdb', 'postgres'], 'duckdb');
  const url = stringFlag(values, 'pg-url');
  const inMemory = booleanFlag(values, 'in-memory');
  let store: StoreChoice;
  if (kind === 'postgres') {
    if (url === undefined) throw new UsageError('--store postgres needs --pg-url <url>');
    if (!isPostgresUrl(url)) {
      throw new UsageError(
        '--pg-url must be a postgres:// or postgresql:// URL, e.g. postgres://user:pw@127.0.0.1:5432/db',
      );
    }
    if (inMemory) throw new UsageError('--in-memory applies to --store duckdb only');
    store = { kind, url };
  } else {
    if (url !== undefined) throw new UsageError('--pg-url applies to --store postgres only');
    store = { kind, inMemory };
  }
  const limit = stringFlag(values, 'limit-conversations');
  return {
    help: false,
    dataPath,
    store,
    strategy: oneOf('--strategy', stringFlag(values, 'strategy'), STRATEGIES, 'lexical'),
    embedder: oneOf('--embedder', stringFlag(values, 'embedder'), EMBEDDERS, 'noop'),
    ...(limit === undefined
      ? {}
      : { limitConversations: positiveInteger('--limit-conversations', limit, 1) }),
    runs: positiveInteger('--runs', stringFlag(values, 'runs'), 1),
  };
}

function isPostgresUrl(text: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** The figures rounded for the JSON line: metrics to 4 decimals, milliseconds to 2. */
export function summarize(result: RecallBenchResult) {
  const r4 = (value: number) => round(value, 4);
  const r2 = (value: number) => round(value, 2);
  const scores = (s: RetrievalScores) => ({
    recallAt1: r4(s.recallAt1),
    recallAt5: r4(s.recallAt5),
    recallAt10: r4(s.recallAt10),
    hitAt10: r4(s.hitAt10),
    mrr: r4(s.mrr),
  });
  const vs = (key: keyof RetrievalScores) => {
    const value = ratio(result[key], result.baseline[key]);
    return value === null ? null : r4(value);
  };
  return {
    bench: result.bench,
    store: result.store,
    strategy: result.strategy,
    embedder: result.embedder,
    questions: result.questions,
    ...scores(result),
    p50Ms: r2(result.p50Ms),
    p95Ms: r2(result.p95Ms),
    baseline: { name: 'bm25-inprocess', ...scores(result.baseline) },
    vsBaseline: {
      recallAt1: vs('recallAt1'),
      recallAt5: vs('recallAt5'),
      recallAt10: vs('recallAt10'),
      hitAt10: vs('hitAt10'),
      mrr: vs('mrr'),
    },
    byCategory: Object.fromEntries(
      Object.entries(result.byCategory).map(([category, f]) => [
        category,
        {
          questions: f.questions,
          recallAt10: r4(f.recallAt10),
          mrr: r4(f.mrr),
          baselineRecallAt10: r4(f.baselineRecallAt10),
          baselineMrr: r4(f.baselineMrr),
        },
      ]),
    ),
    runs: result.runs,
    latency: {
      meanMs: r2(result.latency.meanMs),
      maxMs: r2(result.latency.maxMs),
      perRunP50Ms: result.latency.perRunP50Ms.map(r2),
      perRunP95Ms: result.latency.perRunP95Ms.map(r2),
    },
    rankingsStable: result.rankingsStable,
    ingest: { ...result.ingest, ms: r2(result.ingest.ms) },
    loader: result.loader,
    config: result.config,
    totalMs: r2(result.totalMs),
    machine: result.machine,
    data: result.data,
  };
}

/** The human-readable table printed on stderr before the JSON line. */
export function formatRecallTable(result: RecallBenchResult): string[] {
  const f = (value: number) => value.toFixed(4);
  const x = (a: number, b: number) => {
    const value = ratio(a, b);
    return value === null ? 'n/a' : `${value.toFixed(2)}x`;
  };
  const rows: string[][] = [['metric', 'mnemo', 'BM25 baseline', 'ratio']];
  const labels: [keyof RetrievalScores, string][] = [
    ['recallAt1', 'recall@1'],
    ['recallAt5', 'recall@5'],
    ['recallAt10', 'recall@10'],
    ['hitAt10', 'hit@10'],
    ['mrr', 'MRR'],
  ];
  for (const [key, label] of labels) {
    rows.push([
      label,
      f(result[key]),
      f(result.baseline[key]),
      x(result[key], result.baseline[key]),
    ]);
  }
  const categories: string[][] = [
    ['category', 'questions', 'recall@10', 'BM25 recall@10', 'MRR', 'BM25 MRR'],
  ];
  for (const [category, c] of Object.entries(result.byCategory)) {
    categories.push([
      category,
      String(c.questions),
      f(c.recallAt10),
      f(c.baselineRecallAt10),
      f(c.mrr),
      f(c.baselineMrr),
    ]);
  }
  const { ingest, machine } = result;
  return [
    '',
    `LoCoMo retrieval: ${result.store} (${result.config.storeLocation}), strategy ${result.strategy}, embedder ${result.embedder}; ${result.questions} questions over ${ingest.conversations} conversations`,
    ...formatTable(rows),
    '',
    ...formatTable(categories),
    '',
    `recall latency: p50 ${result.p50Ms.toFixed(2)} ms, p95 ${result.p95Ms.toFixed(2)} ms (median of ${result.runs} run${result.runs === 1 ? '' : 's'})`,
    `ingest: ${ingest.turns} turns → ${ingest.records} records in ${(ingest.ms / 1000).toFixed(2)} s; total ${(result.totalMs / 1000).toFixed(2)} s`,
    `machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}`,
    '',
  ];
}

/**
 * `bench recall`: parses `argv`, runs, prints the table (stderr) and the JSON
 * line (stdout, last). Returns the exit code; errors are one line on stderr.
 */
export async function recallCommand(argv: readonly string[], output: Output): Promise<number> {
  let args: RecallArgs | undefined;
  try {
    args = parseRecallArgs(argv);
    if (args.help) {
      output.out(RECALL_USAGE);
      return 0;
    }
    const result = await runRecallBench({ ...args, progress: output.err });
    for (const line of formatRecallTable(result)) output.err(line);
    output.out(jsonLine(summarize(result)));
    return 0;
  } catch (error) {
    const message = redact(errorMessage(error), args);
    if (error instanceof UsageError) {
      output.err(`bench recall: ${message} (see --help)`);
      return 2;
    }
    if (MnemoError.hasCode(error, 'EMBEDDER_NOT_CONFIGURED')) {
      output.err(`bench recall: ${error.code}: ${message} (use --embedder hash)`);
      return 2;
    }
    const code = MnemoError.isInstance(error) ? `${error.code}: ` : '';
    output.err(`bench recall: ${code}${message}`);
    return 1;
  }
}

/** `text` with the PostgreSQL password (if any) masked, in case a driver message quotes it. */
function redact(text: string, args: RecallArgs | undefined): string {
  if (args === undefined || args.help || args.store.kind !== 'postgres') return text;
  let password = '';
  try {
    password = decodeURIComponent(new URL(args.store.url).password);
  } catch {
    return text;
  }
  return password === '' ? text : text.split(password).join('***');
}
