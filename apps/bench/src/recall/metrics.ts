/**
 * Retrieval metrics of one question: `ranked` is the list of retrieved turn
 * ids, best first; `gold` the question's evidence turn ids (non-empty).
 */

function goldSet(gold: readonly string[]): ReadonlySet<string> {
  const set = new Set(gold);
  if (set.size === 0) throw new RangeError('a question needs at least one gold turn');
  return set;
}

/** The fraction of the gold turns found among the first `k` ranked ids. */
export function recallAtK(ranked: readonly string[], gold: readonly string[], k: number): number {
  const wanted = goldSet(gold);
  const found = new Set(ranked.slice(0, k).filter((id) => wanted.has(id)));
  return found.size / wanted.size;
}

/** 1 when any gold turn is among the first `k` ranked ids, else 0. */
export function hitAtK(ranked: readonly string[], gold: readonly string[], k: number): 0 | 1 {
  const wanted = goldSet(gold);
  return ranked.slice(0, k).some((id) => wanted.has(id)) ? 1 : 0;
}

/** 1 / (rank of the first gold turn), counting ranks from 1; 0 when none is among the first `k`. */
export function reciprocalRank(
  ranked: readonly string[],
  gold: readonly string[],
  k: number,
): number {
  const wanted = goldSet(gold);
  const index = ranked.slice(0, k).findIndex((id) => wanted.has(id));
  return index < 0 ? 0 : 1 / (index + 1);
}

/** The figures reported for a set of questions (each a mean over the questions). */
export interface RetrievalScores {
  recallAt1: number;
  recallAt5: number;
  recallAt10: number;
  hitAt10: number;
  mrr: number;
}

export const METRIC_KEYS = ['recallAt1', 'recallAt5', 'recallAt10', 'hitAt10', 'mrr'] as const;

/** The scores of one question (k = 1, 5, 10; MRR over the top 10). */
export function scoreQuestion(ranked: readonly string[], gold: readonly string[]): RetrievalScores {
  return {
    recallAt1: recallAtK(ranked, gold, 1),
    recallAt5: recallAtK(ranked, gold, 5),
    recallAt10: recallAtK(ranked, gold, 10),
    hitAt10: hitAtK(ranked, gold, 10),
    mrr: reciprocalRank(ranked, gold, 10),
  };
}

/** The mean of each metric over `scores` (all zero for no questions). */
export function meanScores(scores: readonly RetrievalScores[]): RetrievalScores {
  const total: RetrievalScores = { recallAt1: 0, recallAt5: 0, recallAt10: 0, hitAt10: 0, mrr: 0 };
  for (const score of scores) for (const key of METRIC_KEYS) total[key] += score[key];
  if (scores.length > 0) for (const key of METRIC_KEYS) total[key] /= scores.length;
  return total;
}
