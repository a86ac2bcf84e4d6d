/**
 * Scoring a replay run. Each query has the similarity of the best plan the
 * engine found for it (at the lowest threshold) and that plan's label; it is
 * a replay at threshold t exactly when that similarity is ≥ t (see run.ts for
 * why one lookup per query answers every threshold).
 */

/** What the engine answered for one query. */
export interface QueryOutcome {
  /** The query's label; `null` for an out-of-scope (`oos_test`) query. */
  label: string | null;
  /** The best plan's similarity, or null when no plan reached the lowest threshold. */
  similarity: number | null;
  /** The best plan's label, or null. */
  planLabel: string | null;
}

export interface ThresholdRow {
  threshold: number;
  /** Queries that replayed a plan (in scope and out of scope). */
  replays: number;
  /** In-scope queries that replayed a plan of their own label. */
  correct: number;
  /** Out-of-scope queries that replayed a plan (always wrong). */
  oosFalseHits: number;
  /** replays / queries. */
  replayRate: number;
  /** correct / in-scope queries. */
  correctRate: number;
  /** correct / replays; null when nothing replayed. */
  precision: number | null;
  /** oosFalseHits / out-of-scope queries; null without out-of-scope queries. */
  oosFalseHitRate: number | null;
}

/** 0.30, 0.35, …, 1.00, each the exact double of k / 20 (so 0.7 is 0.7, not 0.7000000000000001). */
export const THRESHOLDS: readonly number[] = Array.from({ length: 15 }, (_, i) => (i + 6) / 20);

/** The precision the recommended threshold must reach. */
export const TARGET_PRECISION = 0.95;
export const RECOMMENDATION_RULE = `the lowest threshold whose precision is at least ${TARGET_PRECISION}`;

export function thresholdRow(outcomes: readonly QueryOutcome[], threshold: number): ThresholdRow {
  let replays = 0;
  let correct = 0;
  let oosFalseHits = 0;
  let inScope = 0;
  for (const outcome of outcomes) {
    if (outcome.label !== null) inScope += 1;
    if (outcome.similarity === null || outcome.similarity < threshold) continue;
    replays += 1;
    if (outcome.label === null) oosFalseHits += 1;
    else if (outcome.planLabel === outcome.label) correct += 1;
  }
  const oos = outcomes.length - inScope;
  return {
    threshold,
    replays,
    correct,
    oosFalseHits,
    replayRate: outcomes.length === 0 ? 0 : replays / outcomes.length,
    correctRate: inScope === 0 ? 0 : correct / inScope,
    precision: replays === 0 ? null : correct / replays,
    oosFalseHitRate: oos === 0 ? null : oosFalseHits / oos,
  };
}

/** The recommended row: the lowest threshold with precision ≥ `TARGET_PRECISION`, or null. */
export function recommend(rows: readonly ThresholdRow[]): ThresholdRow | null {
  return (
    [...rows]
      .sort((a, b) => a.threshold - b.threshold)
      .find((row) => row.precision !== null && row.precision >= TARGET_PRECISION) ?? null
  );
}
