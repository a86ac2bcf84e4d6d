import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DemoReport, ReportDatabase } from '../src/report.js';

export const fixtures = fileURLToPath(new URL('fixtures/', import.meta.url));
/** Two documents, four chunks. */
export const corpus = join(fixtures, 'garden');
/** Six questions: two rewordings of earlier ones, one off-topic. */
export const queries = join(fixtures, 'garden-queries.txt');

/** `runDemo` options for the garden fixture, without the store. */
export const gardenOptions = { corpus, queries, keep: false, threshold: 0.7, agent: 'gardener' };

// Each question reads the clock three times (start, after the plan lookup, end): with a clock that
// ticks by 1, every question takes 2 ms, of which the lookup takes 1.
export function tickingClock(): () => number {
  let now = 0;
  return () => {
    now += 1;
    return now;
  };
}

/** The report of a fresh run of the garden fixture with `tickingClock`, on any store. */
export const freshReport = (database: ReportDatabase): DemoReport => ({
  corpus: { source: corpus, files: 2, chunks: 4, deduplicatedChunks: 0 },
  database,
  agent: 'gardener',
  similarityThreshold: 0.7,
  questions: 6,
  planHits: 2,
  planMisses: 4,
  hitRate: 2 / 6,
  plansCached: 3,
  plansDeduplicated: 0,
  plansNotCached: 1,
  retrievalCalls: { made: 4, saved: 2 },
  meanLatencyMs: { planHit: 2, retrieval: 2, planLookup: 1 },
  wrongReplays: 0,
  plansRetired: 0,
  retiredPlansSkipped: 0,
  stalePlansSkipped: 0,
  missingReplayedChunks: 0,
  // 4 chunks, 6 plan lookups, 4 recalls, 3 plans cached, 2 replay outcomes reported.
  audit: { ok: true, events: 4 + 6 + 4 + 3 + 2, chains: 1 },
});

/** What a run with `keep` reports after a fresh run of the fixture on the same store. */
export const keptReport = (database: ReportDatabase) => ({
  // Kept: the chunks are already there (same ids) and so are the three plans.
  corpus: { files: 2, chunks: 4, deduplicatedChunks: 4 },
  database,
  planHits: 5,
  planMisses: 1,
  plansCached: 0,
  plansNotCached: 1,
  retrievalCalls: { made: 1, saved: 5 },
  meanLatencyMs: { planHit: 2, retrieval: 2, planLookup: 1 },
  wrongReplays: 0,
  plansRetired: 0,
  // The fresh run's 19 events, then 6 plan lookups, 1 recall and 5 replay outcomes.
  audit: { ok: true, events: 4 + 6 + 4 + 3 + 2 + (6 + 1 + 5), chains: 1 },
});
