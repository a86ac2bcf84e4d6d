import type { SignatureStrategy } from '@mnemo/experience';
import { runCommand } from '../remember/command.js';
import { booleanFlag, oneOf, parseFlags, positiveInteger, stringFlag } from '../shared/args.js';
import { UsageError } from '../shared/errors.js';
import { formatTable, jsonLine, type Output } from '../shared/output.js';
import { ratio, round } from '../shared/stats.js';
import { parseStoreTarget } from '../shared/stores.js';
import { RECOMMENDATION_RULE, THRESHOLDS, type ThresholdRow } from './metrics.js';
import {
  BASELINE_THRESHOLD,
  OUTCOME_SCORE,
  type ReplayBenchOptions,
  type ReplayBenchResult,
  runReplayBench,
  WRITE_CONCURRENCY,
} from './run.js';

export const REPLAY_USAGE = `Usage: pnpm bench replay --data <file> [options]

Plan replay on intent data in the CLINC150 layout ("train", "test" and an
optional "oos_test", each a list of [utterance, label]): every train
utterance is remembered as a successful plan labelled by its intent
(rememberPlan, ${WRITE_CONCURRENCY} in flight), every test and oos_test utterance is asked
with recallPlan. For thresholds ${THRESHOLDS[0]} to ${THRESHOLDS.at(-1)} in steps of 0.05:
replayRate, correctRate, precision, oosFalseHitRate; the recommended
threshold is ${RECOMMENDATION_RULE}. The default signature
is also scored in-process on the same data, as the baseline.

Options:
  --data <file>              the data file (required), e.g. CLINC150's data_full.json
  --signature default|enriched   the plan signature strategy (default: default)
  --store duckdb|postgres    the store (default duckdb: a temp file, deleted afterwards)
  --pg-url <url>             with --store postgres: postgres://user:pw@host:port/db
                             (a new schema, dropped afterwards)
  --sample N                 ask only every N-th query through recallPlan (default 1:
                             all); every query is scored by an exact scan over the
                             signatures the store holds, and each recallPlan answer
                             must equal the scan's (else exit 1)
  -h, --help                 show this help

Output: progress and a table on stderr; one JSON object as the last line of stdout.
Exit codes: 0 done, 2 bad arguments or data file, 1 anything else.`;

const FLAGS = {
  data: { type: 'string' },
  signature: { type: 'string' },
  store: { type: 'string' },
  'pg-url': { type: 'string' },
  sample: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type ReplayArgs = { help: true } | ({ help: false } & Omit<ReplayBenchOptions, 'progress'>);

/** Parses the flags of `bench replay`; throws `UsageError`. */
export function parseReplayArgs(argv: readonly string[]): ReplayArgs {
  const values = parseFlags(argv, FLAGS);
  if (booleanFlag(values, 'help')) return { help: true };
  const dataPath = stringFlag(values, 'data');
  if (dataPath === undefined) throw new UsageError('--data <file> is required');
  return {
    help: false,
    dataPath,
    signature: oneOf<SignatureStrategy>(
      '--signature',
      stringFlag(values, 'signature'),
      ['default', 'enriched'],
      'default',
    ),
    store: parseStoreTarget(values),
    sample: positiveInteger('--sample', stringFlag(values, 'sample'), 1),
  };
}

const r4 = (value: number | null) => (value === null ? null : round(value, 4));
const r2 = (value: number) => round(value, 2);

function rowJson(row: ThresholdRow) {
  return {
    threshold: row.threshold,
    replays: row.replays,
    correct: row.correct,
    oosFalseHits: row.oosFalseHits,
    replayRate: r4(row.replayRate),
    correctRate: r4(row.correctRate),
    precision: r4(row.precision),
    oosFalseHitRate: r4(row.oosFalseHitRate),
  };
}

/** The JSON line: rates to 4 decimals, milliseconds to 2. */
export function summarizeReplay(r: ReplayBenchResult) {
  const baselineAtDefault = r.baseline.atDefault;
  return {
    bench: r.bench,
    signature: r.signature,
    store: r.store,
    queries: r.queries,
    inScopeQueries: r.inScopeQueries,
    oosQueries: r.oosQueries,
    plans: r.plans,
    rows: r.rows.map(rowJson),
    recommended: {
      rule: RECOMMENDATION_RULE,
      ...(r.recommended === null ? { threshold: null } : rowJson(r.recommended)),
    },
    baseline: {
      name: 'default-signature-inprocess',
      atDefaultThreshold: rowJson(baselineAtDefault),
      recommended: r.baseline.recommended === null ? null : rowJson(r.baseline.recommended),
    },
    vsBaseline: {
      correctRateRecommendedVsBaselineAtDefault:
        r.recommended === null
          ? null
          : r4(ratio(r.recommended.correctRate, baselineAtDefault.correctRate)),
    },
    exactness: r.exactness,
    timing: {
      rememberMs: r2(r.timing.rememberMs),
      plansPerSec: round(r.timing.plansPerSec, 1),
      recallMs: r2(r.timing.recallMs),
      recallP50Ms: r2(r.timing.recallP50Ms),
      recallP95Ms: r2(r.timing.recallP95Ms),
    },
    config: {
      lowestThreshold: THRESHOLDS[0],
      baselineThreshold: BASELINE_THRESHOLD,
      outcomeScore: OUTCOME_SCORE,
      writeConcurrency: WRITE_CONCURRENCY,
      readAuditing: false,
      embedder: 'noop',
      storeInfo: r.storeInfo,
    },
    totalMs: r2(r.totalMs),
    machine: r.machine,
    data: r.data,
  };
}

export function formatReplayTable(r: ReplayBenchResult): string[] {
  const pct = (value: number | null) => (value === null ? 'n/a' : value.toFixed(4));
  const recommended = r.recommended?.threshold;
  return [
    '',
    `replay: ${r.store}, signature ${r.signature}, ${r.plans.stored} plans, ${r.queries} queries (${r.oosQueries} out of scope)`,
    ...formatTable([
      ['threshold', 'replayRate', 'correctRate', 'precision', 'oosFalseHitRate', ''],
      ...r.rows.map((row) => [
        row.threshold.toFixed(2),
        pct(row.replayRate),
        pct(row.correctRate),
        pct(row.precision),
        pct(row.oosFalseHitRate),
        row.threshold === recommended ? '← recommended' : '',
      ]),
    ]),
    `recommended (${RECOMMENDATION_RULE}): ${recommended === undefined ? 'none' : recommended.toFixed(2)}`,
    `baseline (default signature in-process) at ${BASELINE_THRESHOLD}: correctRate ${pct(r.baseline.atDefault.correctRate)}, precision ${pct(r.baseline.atDefault.precision)}`,
    `recallPlan vs exact scan: ${r.exactness.mismatches} of ${r.exactness.checked} answers differ (--sample ${r.exactness.sample})`,
    `rememberPlan: ${r.plans.train} in ${(r.timing.rememberMs / 1000).toFixed(1)} s; recallPlan p50 ${r.timing.recallP50Ms.toFixed(2)} ms, p95 ${r.timing.recallP95Ms.toFixed(2)} ms`,
    '',
  ];
}

export async function replayCommand(argv: readonly string[], output: Output): Promise<number> {
  return runCommand('replay', output, async (setTarget) => {
    const args = parseReplayArgs(argv);
    if (args.help) {
      output.out(REPLAY_USAGE);
      return;
    }
    setTarget(args.store);
    const result = await runReplayBench({ ...args, progress: output.err });
    for (const line of formatReplayTable(result)) output.err(line);
    output.out(jsonLine(summarizeReplay(result)));
    if (result.exactness.mismatches > 0) {
      throw new Error(
        `${result.exactness.mismatches} of ${result.exactness.checked} recallPlan answers differ from the exact scan`,
      );
    }
  });
}
