import { runCommand } from '../remember/command.js';
import { booleanFlag, parseFlags, positiveInteger, stringFlag } from '../shared/args.js';
import { UsageError } from '../shared/errors.js';
import { formatTable, jsonLine, type Output } from '../shared/output.js';
import { ratio, round } from '../shared/stats.js';
import { parseStoreTarget } from '../shared/stores.js';
import {
  FILL_CONCURRENCY,
  type PlansBenchOptions,
  type PlansBenchResult,
  QUERIES,
  runPlansBench,
  SCAN_QUERIES,
  SEED,
  WARMUP,
} from './run.js';
import { MAX_TOKENS, MIN_TOKENS, VOCABULARY } from './workload.js';

export const PLANS_USAGE = `Usage: pnpm bench plans --plans <N> [options]

Plan lookup at scale: fills a fresh store with N plans through rememberPlan
(synthetic signatures of ${MIN_TOKENS}–${MAX_TOKENS} tokens drawn from a Zipf vocabulary of ${VOCABULARY},
seeded; one agent; ${FILL_CONCURRENCY} calls in flight), then times recallPlan through the
engine (threshold 0.7) for ${QUERIES} queries after ${WARMUP} untimed ones, first with read
auditing off (the lookup: "indexed"), then on (each call also commits a
recall_plan audit event: "audited"). Three queries in four paraphrase a stored
plan (one token changed, added or dropped, or none), the rest are fresh
signatures. The baseline, same run: a full scan that fetches every plan and
picks the best one in process (${SCAN_QUERIES} timed scans). Every indexed answer is
checked against the scan's ("identical").

Options:
  --plans <N>                plans to store (required)
  --queries <n>              timed recallPlan calls (default ${QUERIES})
  --scan-queries <n>         timed full scans (default ${SCAN_QUERIES})
  --seed <n>                 workload seed (default ${SEED})
  --store duckdb|postgres    the store (default duckdb: a temp file, deleted afterwards)
  --pg-url <url>             with --store postgres: postgres://user:pw@host:port/db
                             (a new schema, dropped afterwards)
  -h, --help                 show this help

Output: progress and a table on stderr; one JSON object as the last line of stdout.
Exit codes: 0 done, 2 bad arguments, 1 anything else.`;

const FLAGS = {
  plans: { type: 'string' },
  queries: { type: 'string' },
  'scan-queries': { type: 'string' },
  seed: { type: 'string' },
  store: { type: 'string' },
  'pg-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type PlansArgs = { help: true } | ({ help: false } & Omit<PlansBenchOptions, 'progress'>);

/** Parses the flags of `bench plans`; throws `UsageError`. */
export function parsePlansArgs(argv: readonly string[]): PlansArgs {
  const values = parseFlags(argv, FLAGS);
  if (booleanFlag(values, 'help')) return { help: true };
  const plans = stringFlag(values, 'plans');
  if (plans === undefined) throw new UsageError('--plans <N> is required');
  return {
    help: false,
    plans: positiveInteger('--plans', plans, 1),
    queries: positiveInteger('--queries', stringFlag(values, 'queries'), QUERIES),
    scanQueries: positiveInteger(
      '--scan-queries',
      stringFlag(values, 'scan-queries'),
      SCAN_QUERIES,
    ),
    seed: positiveInteger('--seed', stringFlag(values, 'seed'), SEED),
    store: parseStoreTarget(values),
  };
}

/** The JSON line: milliseconds to 3 decimals, the speedup to 1. */
export function summarizePlans(r: PlansBenchResult) {
  const ms = (v: number) => round(v, 3);
  const speedup = ratio(r.scan.p50Ms, r.indexed.p50Ms);
  return {
    bench: r.bench,
    store: r.store,
    plans: r.plans,
    queries: r.queries,
    indexedP50Ms: ms(r.indexed.p50Ms),
    indexedP99Ms: ms(r.indexed.p99Ms),
    scanP50Ms: ms(r.scan.p50Ms),
    speedup: speedup === null ? null : round(speedup, 1),
    auditedP50Ms: ms(r.audited.p50Ms),
    auditedP99Ms: ms(r.audited.p99Ms),
    identical: r.identical,
    mismatches: r.mismatches,
    hits: r.hits,
    meanCandidates: round(r.meanCandidates, 2),
    indexed: {
      p50Ms: ms(r.indexed.p50Ms),
      p99Ms: ms(r.indexed.p99Ms),
      meanMs: ms(r.indexed.meanMs),
      maxMs: ms(r.indexed.maxMs),
    },
    audited: {
      p50Ms: ms(r.audited.p50Ms),
      p99Ms: ms(r.audited.p99Ms),
      meanMs: ms(r.audited.meanMs),
      maxMs: ms(r.audited.maxMs),
    },
    scan: {
      p50Ms: ms(r.scan.p50Ms),
      meanMs: ms(r.scan.meanMs),
      queries: r.scan.queries,
      plansFetched: r.scan.plansFetched,
    },
    fill: { ms: round(r.fill.ms, 2), storedRecords: r.fill.storedRecords },
    config: {
      vocabulary: VOCABULARY,
      tokens: `${MIN_TOKENS}-${MAX_TOKENS}`,
      threshold: r.threshold,
      seed: r.seed,
      warmup: WARMUP,
      fillConcurrency: FILL_CONCURRENCY,
      agents: 1,
      readAuditing: 'off for indexed, on for audited',
      storeInfo: r.storeInfo,
    },
    totalMs: round(r.totalMs, 2),
    machine: r.machine,
  };
}

export function formatPlansTable(r: PlansBenchResult): string[] {
  return [
    '',
    `plans: ${r.store}, ${r.plans} plans, ${r.queries} queries (${r.hits} hits), identical: ${r.identical}`,
    ...formatTable([
      ['lookup', 'p50 ms', 'p99 ms', 'mean ms'],
      [
        'recallPlan (indexed)',
        r.indexed.p50Ms.toFixed(2),
        r.indexed.p99Ms.toFixed(2),
        r.indexed.meanMs.toFixed(2),
      ],
      [
        'recallPlan + audit event',
        r.audited.p50Ms.toFixed(2),
        r.audited.p99Ms.toFixed(2),
        r.audited.meanMs.toFixed(2),
      ],
      [
        `full scan (${r.scan.queries} runs)`,
        r.scan.p50Ms.toFixed(1),
        'n/a',
        r.scan.meanMs.toFixed(1),
      ],
    ]),
    `speedup (scan p50 / indexed p50): ${(r.scan.p50Ms / r.indexed.p50Ms).toFixed(1)}x; fill ${(r.fill.ms / 1000).toFixed(1)} s`,
    '',
  ];
}

export async function plansCommand(argv: readonly string[], output: Output): Promise<number> {
  return runCommand('plans', output, async (setTarget) => {
    const args = parsePlansArgs(argv);
    if (args.help) {
      output.out(PLANS_USAGE);
      return;
    }
    setTarget(args.store);
    const result = await runPlansBench({ ...args, progress: output.err });
    for (const line of formatPlansTable(result)) output.err(line);
    output.out(jsonLine(summarizePlans(result)));
  });
}
