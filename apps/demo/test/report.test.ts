import { describe, expect, it } from 'vitest';
import type { QuestionOutcome, ReplayOutcome, RetrievalOutcome } from '../src/agent-loop.js';
import { formatOutcome, formatReport } from '../src/format-report.js';
import { buildReport, type ReportInput } from '../src/report.js';

const base = { question: 'q?', chunkIds: ['c1'], score: 1, retiredSkipped: 0, staleSkipped: 0 };

function retrieval(fields: Partial<RetrievalOutcome>): RetrievalOutcome {
  return {
    ...base,
    path: 'retrieval',
    latencyMs: 4,
    lookupMs: 1,
    planId: 'p1',
    deduplicated: false,
    ...fields,
  };
}

function replay(fields: Partial<ReplayOutcome>): ReplayOutcome {
  return {
    ...base,
    path: 'replay',
    latencyMs: 2,
    lookupMs: 1,
    planId: 'p1',
    planQuery: 'q',
    similarity: 1,
    wrong: false,
    missing: [],
    runningOutcome: 1,
    retired: false,
    ...fields,
  };
}

const input = (outcomes: QuestionOutcome[]): ReportInput => ({
  corpus: { source: 'default', files: 3, chunks: 9, deduplicatedChunks: 0 },
  database: { store: 'duckdb', path: ':memory:', kept: false },
  agent: 'a',
  similarityThreshold: 0.7,
  outcomes,
  audit: { ok: true, events: 12, chains: 1, problems: [], heads: [] },
});

const outcomes: QuestionOutcome[] = [
  retrieval({ planId: null, latencyMs: 6, lookupMs: 2, retiredSkipped: 2 }),
  replay({ latencyMs: 2, lookupMs: 1, wrong: true, retired: true, missing: ['x', 'y'] }),
  replay({ latencyMs: 4, lookupMs: 3, staleSkipped: 3, missing: ['z'] }),
  retrieval({ planId: 'p2', latencyMs: 10, lookupMs: 2, retiredSkipped: 1 }),
];

describe('buildReport', () => {
  it('counts the outcomes: lookups that skipped plans, chunks gone, means per path', () => {
    const report = buildReport(input(outcomes));
    expect(report).toMatchObject({
      questions: 4,
      planHits: 2,
      planMisses: 2,
      hitRate: 0.5,
      plansCached: 1,
      plansNotCached: 1,
      retrievalCalls: { made: 2, saved: 2 },
      meanLatencyMs: { planHit: 3, retrieval: 8, planLookup: 2 },
      wrongReplays: 1,
      plansRetired: 1,
      // Lookups, not plans: the first skipped two retired plans.
      retiredPlansSkipped: 2,
      stalePlansSkipped: 1,
      // Chunks, not replays.
      missingReplayedChunks: 3,
      audit: { ok: true, events: 12, chains: 1 },
    });
  });

  it('has no means and a hit rate of 0 without questions', () => {
    expect(buildReport(input([]))).toMatchObject({
      questions: 0,
      hitRate: 0,
      meanLatencyMs: { planHit: null, retrieval: null, planLookup: null },
    });
  });
});

describe('formatReport', () => {
  it('adds the stale and gone lines only when they count something, and names a kept PostgreSQL schema', () => {
    const report = {
      ...buildReport(input(outcomes)),
      database: {
        store: 'postgres' as const,
        url: 'postgres://u:***@h/db',
        schema: 'demo',
        kept: true,
      },
      audit: { ok: false, events: 12, chains: 2 },
    };
    expect(formatReport(report).split('\n')).toEqual([
      'mnemo demo report',
      '  corpus                        default: 3 files, 9 chunks',
      '  database                      PostgreSQL postgres://u:***@h/db, schema demo (kept from an earlier run)',
      '  agent                         a',
      '  questions                     4',
      '  plan hits                     2 (50.0%), similarity threshold 0.7',
      '  misses                        2',
      '  plans cached                  1',
      '  plans not cached (low score)  1',
      '  retrieval calls               2 made, 2 saved',
      '  mean latency, plan hit        3.0 ms  (plan lookup + fetch by id)',
      '  mean latency, retrieval path  8.0 ms  (plan lookup + recall + score + cache)',
      '  mean latency, plan lookup     2.0 ms  (recallPlan, part of both paths)',
      '  wrong replays (scorer)        1 of 2',
      '  plans retired (poor replays)  1',
      '  lookups past a retired plan   2',
      '  lookups past a stale plan     1',
      '  replayed chunks gone          3',
      '  audit                         FAILED, 12 events in 2 chains',
    ]);
  });

  it('counts a miss that found its identical plan cached as not cached', () => {
    const report = buildReport(input([retrieval({ deduplicated: true })]));
    expect([report.plansCached, report.plansDeduplicated, report.plansNotCached]).toEqual([
      0, 1, 0,
    ]);
    expect(
      formatReport(report)
        .split('\n')
        .filter((line) => line.includes('plans ')),
    ).toEqual([
      '  plans cached                  0',
      '  plans not cached (low score)  0',
      '  plans not cached (identical)  1',
      '  plans retired (poor replays)  0',
    ]);
  });

  it('counts one file and one chunk in the singular', () => {
    const report = buildReport({
      ...input([]),
      corpus: { source: 'notes', files: 1, chunks: 1, deduplicatedChunks: 0 },
    });
    expect(formatReport(report).split('\n')[1]).toBe(
      '  corpus                        notes: 1 file, 1 chunk',
    );
  });

  it('prints n/a for a path no question took', () => {
    const empty = buildReport({
      ...input([]),
      audit: { ok: true, events: 0, chains: 0, problems: [], heads: [] },
    });
    const lines = formatReport(empty).split('\n');
    expect(lines.at(-1)).toBe('  audit                         ok, 0 events in 0 chains');
    expect(lines.filter((line) => line.includes('mean latency'))).toEqual([
      '  mean latency, plan hit        n/a  (plan lookup + fetch by id)',
      '  mean latency, retrieval path  n/a  (plan lookup + recall + score + cache)',
      '  mean latency, plan lookup     n/a  (recallPlan, part of both paths)',
    ]);
  });
});

describe('formatOutcome', () => {
  it('says how each question went', () => {
    expect(formatOutcome(replay({ similarity: 6 / 7, score: 0.8 }), 0, 12)).toBe(
      '[ 1/12] plan hit (similarity 0.86)         score 0.80    2.0 ms  q?',
    );
    expect(
      formatOutcome(
        replay({ similarity: 6 / 7, score: 0.4, wrong: true, retired: true, runningOutcome: 0.45 }),
        1,
        12,
      ),
    ).toBe(
      '[ 2/12] plan hit (similarity 0.86) WRONG, reported: running outcome 0.45, plan retired score 0.40    2.0 ms  q?',
    );
    // A hit after skipping a retired plan says so too: the report counts both.
    expect(formatOutcome(replay({ similarity: 1, score: 0.9, retiredSkipped: 1 }), 2, 12)).toBe(
      '[ 3/12] plan hit (similarity 1.00; 1 retired plan skipped) score 0.90    2.0 ms  q?',
    );
    expect(formatOutcome(retrieval({ retiredSkipped: 1, score: 0.5 }), 9, 12)).toBe(
      '[10/12] miss (1 retired plan skipped), retrieval, cached score 0.50    4.0 ms  q?',
    );
    expect(
      formatOutcome(
        retrieval({ retiredSkipped: 2, planId: null, score: 0, latencyMs: 12.34 }),
        11,
        12,
      ),
    ).toBe(
      '[12/12] miss (2 retired plans skipped), retrieval, not cached score 0.00   12.3 ms  q?',
    );
  });
});
