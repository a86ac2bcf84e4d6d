import { invalidInput, MnemoError } from '../errors.js';
import type { PlanCandidate, PlanStats } from '../ports/memory-store.js';
import {
  isPlanRecord,
  type JsonObject,
  type JsonValue,
  type MemoryRecord,
  PLAN_METADATA_KEY,
  PLAN_TAG,
  type PlanSignatureStrategy,
  planIndexTokens,
  type Scope,
} from '../records.js';
import {
  isLabel,
  type Limits,
  validateArray,
  validateContent,
  validateLabel,
  validateMetadata,
  validateScope,
  validateText,
} from '../validation.js';
import {
  appendAudit,
  getVisible,
  handleContext,
  type MemoryHandle,
  type RememberResult,
} from './memory-handle.js';
import { writeRecords } from './write-records.js';

/**
 * The plan write and lookup path, for `@mnemo/experience`. Ordinary callers use
 * `remember`, which rejects the reserved plan tag. Plans go through the same
 * write path as every record: validation, hashing, dedup, audit, scope.
 *
 * Each method that reads or writes is one call of the engine (`engine.close()`
 * waits for it; once close is called it is `STORE_UNAVAILABLE`), unless it is
 * made inside this access's `run`, whose calls are all one.
 */
export interface PlanAccess {
  /**
   * Runs `work` as one call of the engine: `engine.close()` waits for all of
   * it, and this access's methods called inside it are part of it, so they
   * still run once close has been called. Use one access per `run`.
   */
  run<T>(work: () => Promise<T>): Promise<T>;
  /**
   * `handle.getMany(ids)`: the records among `ids` the caller may see, in
   * order. An id no record can have (blank, with control characters, longer
   * than 256) is left out like a missing one, not `INVALID_INPUT`: plans may
   * name chunks of other systems.
   */
  getMany(ids: readonly string[]): Promise<MemoryRecord[]>;
  /** True when the engine was created with experience memory on. */
  readonly enabled: boolean;
  /**
   * The engine's plan signature strategy: plans are written with it and
   * queries compared only with plans recorded under it.
   */
  readonly signatureStrategy: PlanSignatureStrategy;
  /** Validates a plan query as record content (`INVALID_INPUT` when blank, too long, …). */
  validateQuery(query: unknown): string;
  /** Validates a scope (`INVALID_INPUT` unless one of `SCOPES`). */
  validateScope(scope: unknown): Scope;
  /** Validates a string of a plan (a step, a chunk id) as metadata text: no NUL, no lone surrogate. */
  validateText(field: string, value: unknown): string;
  /**
   * Validates a plan payload as record metadata would be, returning a clean
   * copy; its size is that of the record's metadata it becomes.
   */
  validatePayload(payload: unknown): JsonObject;
  /**
   * Validates a plan's time to live: absent, or a positive number of
   * milliseconds up to `MAX_PLAN_TTL_MS` (`INVALID_INPUT` otherwise).
   */
  validateTtl(ttlMs: unknown): number | undefined;
  /**
   * Stores a plan record: content = the query, `procedural`, tagged `PLAN_TAG`,
   * payload under `PLAN_METADATA_KEY`, indexed under the set of `tokens`
   * (strings; repeats count once; when the payload has `signature_tokens`, the
   * same set, else `INVALID_INPUT`). With `ttlMs` (a positive number of milliseconds) the
   * record expires that long after the engine clock's now, and like any
   * expired record disappears from every read, plan lookup included.
   */
  writePlan(input: {
    query: string;
    scope?: Scope;
    payload: JsonObject;
    tokens: readonly string[];
    ttlMs?: number;
  }): Promise<RememberResult>;
  /**
   * See `MemoryStore.findPlanCandidates`; visibility is the handle's. A
   * candidate whose stored tokens are not its payload's `signature_tokens`
   * (which its content hash covers, where the stored tokens are only an
   * index) is left out: its row was changed behind the engine's back.
   */
  findCandidates(input: {
    tokens: readonly string[];
    minTokens: number;
    maxTokens: number;
    minShared?: number;
  }): Promise<PlanCandidate[]>;
  /**
   * Appends a `recall_plan` audit event and counts an access of the records
   * it names, the plan replayed (unless read auditing is off).
   */
  auditReplay(recordIds: string[], details: JsonObject): Promise<void>;
  /**
   * Records what a replay of plan `planId` taught, in one transaction with a
   * `plan_outcome` audit event (always appended: it is a write). `next`
   * receives the plan record and its current stats (null before the first
   * report) and returns the new stats and the event's details (to which the
   * stats are added, for `verifyRecords`); it runs while
   * the stats are locked, so concurrent reports of one plan never lose an
   * update. A missing id, a record the caller cannot see (any permission
   * suffices) and a record that is not a plan are all `NOT_FOUND`; with
   * experience memory off, `EXPERIENCE_DISABLED`.
   */
  updatePlanStats(
    planId: string,
    next: (
      plan: MemoryRecord,
      current: PlanStats | null,
    ) => { runningOutcome: number; replays: number; failures: number; details: JsonObject },
  ): Promise<PlanStats>;
}

const MAX_TOKEN_COUNT = 2 ** 31 - 1;
/** Most tokens one plan may be indexed under: more than a payload within the metadata limit holds. */
const MAX_PLAN_TOKENS = 100_000;

/**
 * The longest time to live of a plan, in ms (about 126,000 years): any longer
 * and its expiry could pass the last instant a `Date` can hold. For a plan
 * that never expires, give no `ttlMs`.
 */
export const MAX_PLAN_TTL_MS = 4e15;

function validateTtl(ttlMs: unknown): number | undefined {
  if (ttlMs === undefined) return undefined;
  if (typeof ttlMs !== 'number' || !(ttlMs > 0 && ttlMs <= MAX_PLAN_TTL_MS)) {
    throw invalidInput(
      'ttlMs',
      `must be a positive number of milliseconds up to ${MAX_PLAN_TTL_MS} (omit it for no expiry)`,
    );
  }
  return ttlMs;
}

/**
 * True when `tokens` are the set of the payload's `signature_tokens`, or the
 * payload has none. The stored tokens are an index of the plan; the payload
 * is what its content hash covers.
 */
function signedTokensMatch(payload: JsonValue | undefined, tokens: readonly string[]): boolean {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return true;
  const signed = payload.signature_tokens;
  if (signed === undefined) return true;
  if (!Array.isArray(signed)) return false;
  const set = new Set(signed);
  const indexed = new Set(tokens);
  return set.size === indexed.size && [...indexed].every((token) => set.has(token));
}

export function planAccess(handle: MemoryHandle): PlanAccess {
  const context = handleContext(handle);
  // Inside `run`, calls are part of it; outside, each is a call of its own.
  let runs = 0;
  const call = <T>(work: () => Promise<T>): Promise<T> =>
    runs > 0 ? work() : context.calls.run(work);
  return {
    run: (work) =>
      call(async () => {
        runs += 1;
        try {
          return await work();
        } finally {
          runs -= 1;
        }
      }),
    getMany: (ids) =>
      call(() =>
        getVisible(
          handle,
          validateArray('ids', ids, 10_000).filter((id) => isLabel(id, 256)),
        ),
      ),
    enabled: context.experienceMemory,
    signatureStrategy: context.experienceSignature,
    validateQuery: (query) => validateContent('query', query, context.limits),
    validateScope: (scope) => validateScope('scope', scope),
    validateText,
    validatePayload: (payload) => validatePlanPayload(payload, context.limits),
    validateTtl,
    writePlan: ({ query, scope, payload, tokens, ttlMs }) =>
      call(async () => {
        if (!context.experienceMemory) {
          throw new MnemoError('EXPERIENCE_DISABLED', 'experience memory is off for this engine');
        }
        validateTtl(ttlMs);
        const indexed = planIndexTokens(
          validateArray('tokens', tokens, MAX_PLAN_TOKENS).map((token, index) => {
            if (typeof token !== 'string')
              throw invalidInput(`tokens[${index}]`, 'must be a string');
            return token;
          }),
        );
        if (!signedTokensMatch(payload, indexed))
          throw invalidInput('tokens', "must be the payload's signature_tokens");
        const now = context.clock.now();
        const [result] = await writeRecords(
          handle,
          [
            {
              content: validateContent('query', query, context.limits),
              memoryType: 'procedural',
              scope: scope === undefined ? 'private' : validateScope('scope', scope),
              importance: 0.5,
              tags: [PLAN_TAG],
              metadata: validateMetadata(
                'metadata',
                { [PLAN_METADATA_KEY]: payload },
                context.limits,
              ),
              threadId: null,
              sourceType: null,
              expiresAt: ttlMs === undefined ? null : new Date(now.getTime() + Math.ceil(ttlMs)),
              plan: { tokens: indexed, payload },
            },
          ],
          now,
          () => 'ttlMs',
        );
        return result as RememberResult;
      }),
    findCandidates: ({ tokens, minTokens, maxTokens, minShared }) =>
      call(async () =>
        (
          await context.store.findPlanCandidates({
            visibility: {
              agentId: handle.principal.agentId,
              orgId: handle.principal.orgId,
              now: context.clock.now(),
            },
            tokens,
            // A tiny similarity threshold makes the upper size bound huge (or infinite): no plan
            // has more tokens than a 32-bit count, which every store can bind.
            minTokens: Math.min(minTokens, MAX_TOKEN_COUNT),
            maxTokens: Math.min(maxTokens, MAX_TOKEN_COUNT),
            ...(minShared === undefined ? {} : { minShared }),
          })
        ).filter((candidate) =>
          signedTokensMatch(
            candidate.record.metadata[PLAN_METADATA_KEY],
            candidate.signatureTokens,
          ),
        ),
      ),
    auditReplay: (recordIds, details) =>
      call(async () => {
        if (!context.readAuditing) return;
        const now = context.clock.now();
        // The plan replayed is read like a recall's hits: counted as an access.
        await context.store.transaction(async (tx) => {
          if (recordIds.length > 0) await tx.touch(recordIds, now);
          await appendAudit(handle, tx, now, 'recall_plan', recordIds, details);
        });
      }),
    updatePlanStats: (planId, next) =>
      call(async () => {
        if (!context.experienceMemory) {
          throw new MnemoError('EXPERIENCE_DISABLED', 'experience memory is off for this engine');
        }
        const id = validateLabel('planId', planId, 256);
        const now = context.clock.now();
        const visibility = {
          agentId: handle.principal.agentId,
          orgId: handle.principal.orgId,
          now,
        };
        return context.store.transaction(async (tx) => {
          // Lock first, then read: a forget or another report of this plan waits for us (or we for it).
          const current = await tx.lockPlanStats(id);
          const [visible] = await tx.get(visibility, [id]);
          if (visible === undefined || !isPlanRecord(visible.record)) {
            throw new MnemoError('NOT_FOUND', `no plan ${id} visible to the caller`, {
              details: { id },
            });
          }
          const { runningOutcome, replays, failures, details } = next(visible.record, current);
          if (!(runningOutcome >= 0 && runningOutcome <= 1))
            throw invalidInput('runningOutcome', 'must be a number from 0 to 1');
          for (const [field, count] of [
            ['replays', replays],
            ['failures', failures],
          ] as const) {
            if (!Number.isSafeInteger(count) || count < 0)
              throw invalidInput(field, 'must be an integer ≥ 0');
          }
          const stats: PlanStats = {
            planId: id,
            runningOutcome,
            replays,
            failures,
            updatedAt: now,
          };
          await tx.putPlanStats(stats);
          // The stats themselves, whatever else `details` holds: `verifyRecords` checks the
          // stored ones against them.
          await appendAudit(handle, tx, now, 'plan_outcome', [id], {
            ...details,
            runningOutcome,
            replays,
            failures,
          });
          return stats;
        });
      }),
  };
}

/**
 * A plan payload validated as the metadata of the record it becomes (under
 * `PLAN_METADATA_KEY`: its depth and size as stored), so that a payload that
 * passes here is never refused by the write; a clean copy.
 */
function validatePlanPayload(payload: unknown, limits: Limits): JsonObject {
  const stored = validateMetadata(
    'metadata',
    { [PLAN_METADATA_KEY]: payload },
    { ...limits, maxMetadataBytes: Number.POSITIVE_INFINITY },
  );
  const clean = stored[PLAN_METADATA_KEY];
  if (typeof clean !== 'object' || clean === null || Array.isArray(clean)) {
    throw invalidInput('plan', 'must be a plain object');
  }
  const bytes = Buffer.byteLength(JSON.stringify(stored), 'utf8');
  if (bytes > limits.maxMetadataBytes) {
    throw invalidInput(
      'plan',
      `takes ${bytes} bytes as metadata (query, steps, chunk ids and their hashes), over limits.maxMetadataBytes (${limits.maxMetadataBytes})`,
    );
  }
  return clean;
}
