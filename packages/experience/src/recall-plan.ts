import { compareByteOrder, type MemoryHandle, type PlanAccess, planAccess } from '@mnemo/core';
import { DEFAULT_SIMILARITY_THRESHOLD, DEFAULT_SUCCESS_THRESHOLD } from './constants.js';
import { checkOptions, invalid } from './input.js';
import { type CachedPlan, type PlanPayload, readPayload } from './plan.js';
import { jaccard, signatureTokens } from './signature.js';
import { isStale } from './staleness.js';

export interface RecallPlanInput {
  query: string;
  /** In (0, 1]; default `DEFAULT_SIMILARITY_THRESHOLD`. */
  similarityThreshold?: number;
}

export interface RecallPlanResult {
  /** The best visible plan at or above the threshold, or null (a miss). */
  plan: CachedPlan | null;
  /**
   * Visible plans examined: those within the size bounds that share enough
   * tokens with the query to possibly reach the threshold (⌈t·|A|⌉ of its |A|
   * tokens). Every plan at or above the threshold is among them.
   */
  candidatesConsidered: number;
  /**
   * Plans at or above the threshold that ranked above the one returned (all
   * of them on a miss) but were skipped because a chunk they name was
   * forgotten, redacted, expired, changed or is not visible to the caller.
   */
  stale: number;
  /** Plans at or above the threshold skipped because their running outcome fell below `DEFAULT_SUCCESS_THRESHOLD`. */
  retired: number;
}

// Tolerance for the float arithmetic of the size bounds; candidates are verified exactly afterwards.
const EPSILON = 1e-9;

/**
 * The best visible cached plan for `query`: highest Jaccard similarity of the
 * signatures, then highest running outcome, then newest. Only plans stored
 * under the engine's signature strategy are compared. Exact: every visible
 * plan that could reach the threshold is examined. Plans whose running outcome
 * fell below `DEFAULT_SUCCESS_THRESHOLD` (see `reportPlanOutcome`) are not
 * replayed (`retired`); nor are stale ones (`stale`): the next valid plan is
 * returned instead. Every call appends a `recall_plan` audit event, hit or
 * miss, unless read auditing is off. Misses (with `candidatesConsidered: 0`)
 * when experience memory is off.
 */
export async function recallPlan(
  handle: MemoryHandle,
  input: RecallPlanInput,
): Promise<RecallPlanResult> {
  checkOptions('input', input, ['query', 'similarityThreshold']);
  const access = planAccess(handle);
  const query = access.validateQuery(input.query);
  const threshold =
    input.similarityThreshold === undefined
      ? DEFAULT_SIMILARITY_THRESHOLD
      : input.similarityThreshold;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) {
    throw invalid('similarityThreshold', 'must be a number in (0, 1]');
  }
  if (!access.enabled) return { plan: null, candidatesConsidered: 0, stale: 0, retired: 0 };
  // One call of the engine, so that `engine.close()` lets it finish.
  return access.run(() => findPlan(access, query, threshold));
}

/** The best valid plan for `query` at `threshold`, with the `recall_plan` audit event. */
async function findPlan(
  access: PlanAccess,
  query: string,
  threshold: number,
): Promise<RecallPlanResult> {
  const strategy = access.signatureStrategy;
  const tokens = signatureTokens(query, strategy);
  const ranked: { plan: CachedPlan; payload: PlanPayload; createdAt: number }[] = [];
  let candidatesConsidered = 0;
  let retired = 0;
  if (tokens.length > 0) {
    // A set B can reach similarity t against A only if t·|A| ≤ |B| ≤ |A| / t,
    // and then it shares at least t·|A∪B| ≥ t·|A| tokens with A.
    const least = Math.max(1, Math.ceil(threshold * tokens.length - EPSILON));
    const candidates = await access.findCandidates({
      tokens,
      minTokens: least,
      maxTokens: Math.floor(tokens.length / threshold + EPSILON),
      minShared: least,
    });
    candidatesConsidered = candidates.length;
    for (const { record, signatureTokens: planTokens, stats } of candidates) {
      const payload = readPayload(record);
      // Strategies keep disjoint tokens, so the store never returns a plan of
      // another strategy; checking the recorded one keeps that a guarantee.
      if (payload === null || payload.signature_strategy !== strategy) continue;
      const similarity = jaccard(tokens, planTokens);
      if (similarity < threshold) continue;
      const runningOutcome = stats?.runningOutcome ?? payload.outcome_score;
      if (runningOutcome < DEFAULT_SUCCESS_THRESHOLD) {
        retired += 1;
        continue;
      }
      ranked.push({
        plan: {
          id: record.id,
          query: payload.query,
          steps: payload.steps,
          chunkIds: payload.chunk_ids,
          outcomeScore: payload.outcome_score,
          similarity,
          runningOutcome,
          replays: stats?.replays ?? 0,
          failures: stats?.failures ?? 0,
        },
        payload,
        createdAt: record.createdAt.getTime(),
      });
    }
  }
  ranked.sort((x, y) => (ranksHigher(x.plan, x.createdAt, y.plan, y.createdAt) ? -1 : 1));
  // Best first; a stale plan is skipped for the next. One chunk lookup per plan tried.
  let best: CachedPlan | null = null;
  let stale = 0;
  for (const { plan, payload } of ranked) {
    if (await isStale(access, payload)) {
      stale += 1;
      continue;
    }
    best = plan;
    break;
  }
  await access.auditReplay(best === null ? [] : [best.id], {
    hit: best !== null,
    similarity: best?.similarity ?? null,
    candidatesConsidered,
    stale,
    retired,
    threshold,
  });
  return { plan: best, candidatesConsidered, stale, retired };
}

function ranksHigher(
  plan: CachedPlan,
  createdAt: number,
  other: CachedPlan,
  otherCreatedAt: number,
): boolean {
  if (plan.similarity !== other.similarity) return plan.similarity > other.similarity;
  if (plan.runningOutcome !== other.runningOutcome)
    return plan.runningOutcome > other.runningOutcome;
  if (createdAt !== otherCreatedAt) return createdAt > otherCreatedAt;
  // Byte order, as the stores sort ids: JavaScript's `>` compares UTF-16 code units.
  return compareByteOrder(plan.id, other.id) > 0;
}
