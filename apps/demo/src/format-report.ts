import type { QuestionOutcome } from './agent-loop.js';
import type { DemoReport } from './report.js';

const LABEL_WIDTH = 30;

/** The report as aligned text lines. */
export function formatReport(report: DemoReport): string {
  const { corpus, database } = report;
  const rows: [string, string][] = [
    [
      'corpus',
      `${corpus.source}: ${plural(corpus.files, 'file')}, ${plural(corpus.chunks, 'chunk')}`,
    ],
    [
      'database',
      `${databaseName(database)} (${database.kept ? 'kept from an earlier run' : 'fresh'})`,
    ],
    ['agent', report.agent],
    ['questions', String(report.questions)],
    [
      'plan hits',
      `${report.planHits} (${percent(report.hitRate)}), similarity threshold ${report.similarityThreshold}`,
    ],
    ['misses', String(report.planMisses)],
    ['plans cached', String(report.plansCached)],
    ['plans not cached (low score)', String(report.plansNotCached)],
    ...(report.plansDeduplicated > 0
      ? [['plans not cached (identical)', String(report.plansDeduplicated)] as [string, string]]
      : []),
    ['retrieval calls', `${report.retrievalCalls.made} made, ${report.retrievalCalls.saved} saved`],
    [
      'mean latency, plan hit',
      `${milliseconds(report.meanLatencyMs.planHit)}  (plan lookup + fetch by id)`,
    ],
    [
      'mean latency, retrieval path',
      `${milliseconds(report.meanLatencyMs.retrieval)}  (plan lookup + recall + score + cache)`,
    ],
    [
      'mean latency, plan lookup',
      `${milliseconds(report.meanLatencyMs.planLookup)}  (recallPlan, part of both paths)`,
    ],
    ['wrong replays (scorer)', `${report.wrongReplays} of ${report.planHits}`],
    ['plans retired (poor replays)', String(report.plansRetired)],
    ['lookups past a retired plan', String(report.retiredPlansSkipped)],
    ...(report.stalePlansSkipped > 0
      ? [['lookups past a stale plan', String(report.stalePlansSkipped)] as [string, string]]
      : []),
    ...(report.missingReplayedChunks > 0
      ? [['replayed chunks gone', String(report.missingReplayedChunks)] as [string, string]]
      : []),
    [
      'audit',
      `${report.audit.ok ? 'ok' : 'FAILED'}, ${report.audit.events} events in ${plural(report.audit.chains, 'chain')}`,
    ],
  ];
  return [
    'mnemo demo report',
    ...rows.map(([label, value]) => `  ${label.padEnd(LABEL_WIDTH)}${value}`),
  ].join('\n');
}

/** One progress line per question: its number, the path it took, its score, latency and text. */
export function formatOutcome(outcome: QuestionOutcome, index: number, total: number): string {
  const width = String(total).length;
  const number = `[${String(index + 1).padStart(width)}/${total}]`;
  const time = milliseconds(outcome.latencyMs).padStart(9);
  const skipped =
    outcome.retiredSkipped > 0
      ? ` (${plural(outcome.retiredSkipped, 'retired plan')} skipped)`
      : '';
  const what =
    outcome.path === 'replay'
      ? `plan hit (similarity ${outcome.similarity.toFixed(2)}${
          outcome.retiredSkipped > 0
            ? `; ${plural(outcome.retiredSkipped, 'retired plan')} skipped`
            : ''
        })${outcome.wrong ? ' WRONG' : ''}${
          outcome.retired
            ? `, reported: running outcome ${outcome.runningOutcome.toFixed(2)}, plan retired`
            : ''
        }`
      : outcome.planId === null
        ? `miss${skipped}, retrieval, not cached`
        : outcome.deduplicated
          ? `miss${skipped}, retrieval, not cached (identical plan exists)`
          : `miss${skipped}, retrieval, cached`;
  return `${number} ${what.padEnd(34)} score ${outcome.score.toFixed(2)} ${time}  ${outcome.question}`;
}

function databaseName(database: DemoReport['database']): string {
  return database.store === 'duckdb'
    ? `DuckDB ${database.path}`
    : `PostgreSQL ${database.url}, schema ${database.schema}`;
}

function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

function milliseconds(value: number | null): string {
  return value === null ? 'n/a' : `${value.toFixed(1)} ms`;
}

/** `count` and the noun, in the singular for one: "1 file", "2 files". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
