import type { MemoryHandle, PlanAccess, Scope } from '@mnemo/core';
import { DEFAULT_SUCCESS_THRESHOLD } from './constants.js';
import { checkOptions, enabledPlanAccess, invalid } from './input.js';
import { toPayloadJson } from './plan.js';
import { signatureTokens } from './signature.js';
import { chunkHashes } from './staleness.js';

export interface RememberPlanInput {
  /** The query the plan answered. Its signature is what later queries are matched against. */
  query: string;
  /** The steps that produced the outcome (for example tool calls), replayed as they are. */
  steps: readonly string[];
  /** Ids of the records (chunks) the plan retrieved. */
  chunkIds: readonly string[];
  /** How well the plan did, 0..1. Below `DEFAULT_SUCCESS_THRESHOLD`, NaN or negative: not cached. */
  outcomeScore: number;
  /** Default `private`. */
  scope?: Scope;
  /**
   * The plan expires this many milliseconds after now (a positive number):
   * from then on it is never replayed, like any expired record. Default: never.
   */
  ttlMs?: number;
}

export interface RememberPlanResult {
  /** The plan record's id, or null when nothing was stored. */
  id: string | null;
  /** The query's signature tokens, under the engine's signature strategy. */
  signature: string[];
  stored: boolean;
  /**
   * Present (true) when an identical plan (same query, owner, scope, steps,
   * chunks and score) was cached already and still live: its id is returned
   * and nothing new is written, so that plan keeps its own `ttlMs` and its
   * reported outcomes (a retired one stays retired: forget it to cache the
   * plan anew).
   */
  deduplicated?: true;
  /**
   * Why nothing was stored: the outcome was a failure, or the query has no
   * signature tokens (no word of 3+ letters or digits), so no query could ever
   * match it. Absent when stored.
   */
  reason?: 'below_success_threshold' | 'empty_signature';
}

const MAX_STEPS = 256;
const MAX_CHUNK_IDS = 1000;
/** A content hash as long as any (SHA-256 hex), standing in for each chunk's in the size check. */
const LARGEST_HASH = '0'.repeat(64);

function stringList(access: PlanAccess, field: string, value: unknown, max: number): string[] {
  if (!Array.isArray(value)) throw invalid(field, 'must be an array of strings');
  if (value.length > max) throw invalid(field, `must have at most ${max} items`);
  // `Array.from` visits holes (as undefined), where `map` skips them.
  return Array.from(value, (item: unknown, index) =>
    access.validateText(`${field}[${index}]`, item),
  );
}

/**
 * Caches a successful plan as a record of the caller's (see SPEC §4), its
 * signature computed with the engine's strategy (`experienceSignature`) and
 * the strategy recorded in the payload unless it is `default`. Fails
 * with `EXPERIENCE_DISABLED` when the engine's experience memory is off.
 * A failed outcome, or a query without signature tokens, is not cached:
 * `{ id: null, stored: false, reason }`, nothing written. Invalid input is
 * `INVALID_INPUT` whatever the score.
 */
export async function rememberPlan(
  handle: MemoryHandle,
  input: RememberPlanInput,
): Promise<RememberPlanResult> {
  const access = enabledPlanAccess(handle);
  checkOptions('input', input, ['query', 'steps', 'chunkIds', 'outcomeScore', 'scope', 'ttlMs']);
  const query = access.validateQuery(input.query);
  const scope = input.scope === undefined ? undefined : access.validateScope(input.scope);
  const steps = stringList(access, 'steps', input.steps, MAX_STEPS);
  const chunkIds = stringList(access, 'chunkIds', input.chunkIds, MAX_CHUNK_IDS);
  const score = input.outcomeScore;
  if (typeof score !== 'number' || score > 1 || score === Number.POSITIVE_INFINITY) {
    throw invalid('outcomeScore', 'must be a number no greater than 1');
  }
  const ttlMs = access.validateTtl(input.ttlMs);
  const signature = signatureTokens(query, access.signatureStrategy);
  // Validated like any metadata (no NUL, no lone surrogates, size limit) before deciding
  // anything, at the size it has once every chunk's hash is added below: whether a plan fits
  // must not depend on which of its ids name records the caller can see.
  const payload = access.validatePayload(
    toPayloadJson({
      query,
      signature_tokens: signature,
      steps,
      chunk_ids: chunkIds,
      outcome_score: Number.isNaN(score) || score < 0 ? 0 : score,
      signature_strategy: access.signatureStrategy,
      chunk_hashes: chunkIds.map(() => LARGEST_HASH),
    }),
  );
  if (Number.isNaN(score) || score < DEFAULT_SUCCESS_THRESHOLD) {
    return { id: null, signature, stored: false, reason: 'below_success_threshold' };
  }
  if (signature.length === 0) {
    return { id: null, signature, stored: false, reason: 'empty_signature' };
  }
  // One call of the engine, so that `engine.close()` lets it finish.
  return access.run<RememberPlanResult>(async () => {
    // The content hash of every chunk as the caller sees it now, so a replay can
    // tell when one was forgotten, redacted or changed since (see `isStale`).
    const withHashes = access.validatePayload({
      ...payload,
      chunk_hashes: await chunkHashes(access, chunkIds),
    });
    const { id, deduplicated } = await access.writePlan({
      query,
      ...(scope === undefined ? {} : { scope }),
      ...(ttlMs === undefined ? {} : { ttlMs }),
      tokens: signature,
      payload: withHashes,
    });
    return { id, signature, stored: true, ...(deduplicated ? { deduplicated } : {}) };
  });
}
