import { type MemoryHandle, MnemoError, planAccess } from '@mnemo/core';
import { DEFAULT_SIMILARITY_THRESHOLD } from './constants.js';
import { type CachedPlan, readPayload } from './plan.js';
import { jaccard, signatureTokens } from './signature.js';

export interface RecallPlanInput {
  query: string;
  /** In (0, 1]; default `DEFAULT_SIMILARITY_THRESHOLD`. */
  similarityThreshold?: number;
}

export interface RecallPlanResult {
  /** The best visible plan at or above the threshold, or null (a miss). */
  plan: CachedPlan | null;
  /** Visible plans examined: those sharing a token with the query and within the size bounds. */
  candidatesConsidered: number;
}

// Tolerance for the float arithmetic of the size bounds; candidates are verified exactly afterwards.
const EPSILON = 1e-9;

/**
 * The best visible cached plan for `query`: highest Jaccard similarity of the
 * signatures, then highest outcome score, then newest. Only plans stored
 * under the engine's signature strategy are compared. Exact: every visible
 * plan that could reach the threshold is examined. Misses (with
 * `candidatesConsidered: 0`) when experience memory is off.
 */
export async function recallPlan(
  handle: MemoryHandle,
  input: RecallPlanInput,
): Promise<RecallPlanResult> {
  if (typeof input !== 'object' || input === null) {
    throw new MnemoError('INVALID_INPUT', 'input: must be an object', {
      details: { field: 'input' },
    });
  }
  for (const key of Object.keys(input)) {
    if (key !== 'query' && key !== 'similarityThreshold') {
      throw new MnemoError('INVALID_INPUT', `input.${key}: is not a known option`, {
        details: { field: `input.${key}` },
      });
    }
  }
  const access = planAccess(handle);
  const query = access.validateQuery(input.query);
  const threshold = input.similarityThreshold ?? DEFAULT_SIMILARITY_THRESHOLD;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) {
    throw new MnemoError('INVALID_INPUT', 'similarityThreshold: must be a number in (0, 1]', {
      details: { field: 'similarityThreshold' },
    });
  }
  if (!access.enabled) return { plan: null, candidatesConsidered: 0 };

  const strategy = access.signatureStrategy;
  const tokens = signatureTokens(query, strategy);
  let best: { plan: CachedPlan; createdAt: number } | null = null;
  let candidatesConsidered = 0;
  if (tokens.length > 0) {
    // A set B can reach similarity t against A only if t·|A| ≤ |B| ≤ |A| / t.
    const candidates = await access.findCandidates({
      tokens,
      minTokens: Math.max(1, Math.ceil(threshold * tokens.length - EPSILON)),
      maxTokens: Math.floor(tokens.length / threshold + EPSILON),
    });
    candidatesConsidered = candidates.length;
    for (const { record, signatureTokens: planTokens } of candidates) {
      const payload = readPayload(record);
      // Strategies keep disjoint tokens, so the store never returns a plan of
      // another strategy; checking the recorded one keeps that a guarantee.
      if (payload === null || payload.signature_strategy !== strategy) continue;
      const similarity = jaccard(tokens, planTokens);
      if (similarity < threshold) continue;
      const plan: CachedPlan = {
        id: record.id,
        query: payload.query,
        steps: payload.steps,
        chunkIds: payload.chunk_ids,
        outcomeScore: payload.outcome_score,
        similarity,
      };
      const createdAt = record.createdAt.getTime();
      if (best === null || ranksHigher(plan, createdAt, best.plan, best.createdAt))
        best = { plan, createdAt };
    }
  }
  await access.auditReplay(best === null ? [] : [best.plan.id], {
    hit: best !== null,
    similarity: best?.plan.similarity ?? null,
    candidatesConsidered,
    threshold,
  });
  return { plan: best?.plan ?? null, candidatesConsidered };
}

function ranksHigher(
  plan: CachedPlan,
  createdAt: number,
  other: CachedPlan,
  otherCreatedAt: number,
): boolean {
  if (plan.similarity !== other.similarity) return plan.similarity > other.similarity;
  if (plan.outcomeScore !== other.outcomeScore) return plan.outcomeScore > other.outcomeScore;
  if (createdAt !== otherCreatedAt) return createdAt > otherCreatedAt;
  return plan.id > other.id;
}
