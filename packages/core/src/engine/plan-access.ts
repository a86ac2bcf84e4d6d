import { MnemoError } from '../errors.js';
import type { PlanCandidate } from '../ports/memory-store.js';
import {
  type JsonObject,
  PLAN_METADATA_KEY,
  PLAN_TAG,
  type PlanSignatureStrategy,
  type Scope,
} from '../records.js';
import { validateContent, validateMetadata, validateScope } from '../validation.js';
import {
  appendAudit,
  handleContext,
  type MemoryHandle,
  type RememberResult,
} from './memory-handle.js';
import { writeRecords } from './write-records.js';

/**
 * The plan write and lookup path, for `@mnemo/experience`. Ordinary callers use
 * `remember`, which rejects the reserved plan tag. Plans go through the same
 * write path as every record: validation, hashing, dedup, audit, scope.
 */
export interface PlanAccess {
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
  /** Validates a plan payload as record metadata would be, returning a clean copy. */
  validatePayload(payload: unknown): JsonObject;
  /** Stores a plan record: content = the query, `procedural`, tagged `PLAN_TAG`, payload under `PLAN_METADATA_KEY`. */
  writePlan(input: {
    query: string;
    scope?: Scope;
    payload: JsonObject;
    tokens: readonly string[];
  }): Promise<RememberResult>;
  /** See `MemoryStore.findPlanCandidates`; visibility is the handle's. */
  findCandidates(input: {
    tokens: readonly string[];
    minTokens: number;
    maxTokens: number;
  }): Promise<PlanCandidate[]>;
  /** Appends a `recall_plan` audit event (unless read auditing is off). */
  auditReplay(recordIds: string[], details: JsonObject): Promise<void>;
}

const MAX_TOKEN_COUNT = 2 ** 31 - 1;

export function planAccess(handle: MemoryHandle): PlanAccess {
  const context = handleContext(handle);
  return {
    enabled: context.experienceMemory,
    signatureStrategy: context.experienceSignature,
    validateQuery: (query) => validateContent('query', query, context.limits),
    validateScope: (scope) => validateScope('scope', scope),
    validatePayload: (payload) => validateMetadata('plan', payload, context.limits),
    writePlan: async ({ query, scope, payload, tokens }) => {
      if (!context.experienceMemory) {
        throw new MnemoError('EXPERIENCE_DISABLED', 'experience memory is off for this engine');
      }
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
            expiresAt: null,
            plan: { tokens: [...tokens], payload },
          },
        ],
        context.clock.now(),
      );
      return result as RememberResult;
    },
    findCandidates: ({ tokens, minTokens, maxTokens }) =>
      context.store.findPlanCandidates({
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
      }),
    auditReplay: async (recordIds, details) => {
      if (!context.readAuditing) return;
      const now = context.clock.now();
      await context.store.transaction((tx) =>
        appendAudit(handle, tx, now, 'recall_plan', recordIds, details),
      );
    },
  };
}
