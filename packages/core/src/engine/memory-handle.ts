import { queryTerms } from '../analyzer.js';
import { appendAuditEntries } from '../audit/append-audit.js';
import type { AuditOp } from '../audit/audit-event.js';
import { sha256Hex } from '../canonical.js';
import { invalidInput, MnemoError } from '../errors.js';
import { contentHash, principalKey } from '../hashing.js';
import type {
  RecordFilters,
  ScoredRecord,
  StoreTx,
  Visibility,
  VisibleRecord,
} from '../ports/memory-store.js';
import {
  type JsonObject,
  type MemoryRecord,
  type MemoryType,
  type Permission,
  type Principal,
  permissionLevel,
  REDACTED_CONTENT,
  type Scope,
} from '../records.js';
import {
  checkKeys,
  type Limits,
  validateArray,
  validateContent,
  validateDate,
  validateFilters,
  validateId,
  validateLabel,
  validateLimit,
  validateMemoryType,
  validateMetadata,
  validatePermission,
  validateScope,
  validateTags,
  validateUnitInterval,
} from '../validation.js';
import { dimensionMismatch, storeEmbeddingDimensions } from './dimensions.js';
import { embedTexts } from './embed.js';
import type { EngineContext } from './engine-context.js';
import { fuseLanes, type Lane, type LaneScore, recencyLane } from './fusion.js';
import { writeRecords } from './write-records.js';

export interface RememberInput {
  /** Non-blank text, at most `limits.maxContentBytes` UTF-8 bytes. */
  content: string;
  /** Default `episodic`. */
  memoryType?: MemoryType;
  /** Default `private`. */
  scope?: Scope;
  /** 0..1, default 0.5. */
  importance?: number;
  tags?: readonly string[];
  metadata?: JsonObject;
  threadId?: string;
  sourceType?: string;
  /** The record expires (disappears from every read) at this instant; must be in the future. */
  expiresAt?: Date;
}

export interface RememberResult {
  id: string;
  contentHash: string;
  /** True when a live record with the same normalized content, owner and scope already existed: its id is returned and nothing is written. */
  deduplicated: boolean;
}

export type RecallStrategy = 'lexical' | 'semantic' | 'hybrid' | 'auto';

export interface RecallInput {
  query: string;
  /** 1..100, default 10. */
  limit?: number;
  /** Default `auto`: hybrid when the embedder is semantic, else lexical. */
  strategy?: RecallStrategy;
  filters?: RecordFilters;
  /** Attach each lane's rank and score to every hit. */
  explain?: boolean;
}

export interface RecallHit {
  record: MemoryRecord;
  /** The strategy's score: BM25, cosine similarity, or the fused RRF score. */
  score: number;
  /** With `explain: true`: the rank (1-based) and score of the hit in each lane that found it. */
  explain?: Partial<Record<Lane, LaneScore>>;
}

export interface RecallResult {
  /** The strategy that ran (`auto` resolved). */
  strategy: Exclude<RecallStrategy, 'auto'>;
  hits: RecallHit[];
}

export type ForgetMode = 'soft' | 'hard' | 'redact';

/** What `forget` forgets: exactly one of `ids` or `filters` (else `INVALID_INPUT`), and how. */
export type ForgetInput = ForgetByIds | ForgetByFilters;

export interface ForgetByIds {
  /** Forget exactly these records; each must be visible (else `NOT_FOUND`) and deletable by the caller (else `PERMISSION_DENIED`). */
  ids: readonly string[];
  filters?: never;
  /** `soft` (default) marks deleted; `hard` removes the row; `redact` erases content and metadata but keeps the row and its hash. */
  mode?: ForgetMode;
}

export interface ForgetByFilters {
  ids?: never;
  /** Every visible, non-plan record matching these (non-empty) filters that the caller may delete. */
  filters: RecordFilters;
  /** See `ForgetByIds.mode`. */
  mode?: ForgetMode;
}

export interface ForgetResult {
  mode: ForgetMode;
  /** Ids forgotten, ascending. */
  forgotten: string[];
}

export interface ShareInput {
  recordId: string;
  /** Agent ids (of the record's org) to grant to. */
  with: readonly string[];
  /**
   * Default `read`. Cannot exceed the caller's own permission. A grant
   * replaces the grantee's existing one; only the owner, or a caller whose
   * permission is higher than what the grantee holds, may replace it
   * (`PERMISSION_DENIED` otherwise).
   */
  permission?: Permission;
  /** The grant lapses at this instant. */
  expiresAt?: Date;
}

export interface ShareResult {
  recordId: string;
  permission: Permission;
  grantees: string[];
  expiresAt: Date | null;
}

/** Internal write request: what `remember` and the plan write path share. */
export interface RecordDraft {
  content: string;
  memoryType: MemoryType;
  scope: Scope;
  importance: number;
  tags: string[];
  metadata: JsonObject;
  threadId: string | null;
  sourceType: string | null;
  expiresAt: Date | null;
  /** Set by the plan write path only. */
  plan: { tokens: string[]; payload: JsonObject } | null;
}

/** Validates one `RememberInput` into a draft; `prefix` names the input in errors. */
function draftFrom(input: unknown, limits: Limits, prefix: string): RecordDraft {
  const fields = checkKeys(prefix === '' ? 'input' : prefix.slice(0, -1), input, [
    'content',
    'memoryType',
    'scope',
    'importance',
    'tags',
    'metadata',
    'threadId',
    'sourceType',
    'expiresAt',
  ]);
  const f = (name: string) => `${prefix}${name}`;
  return {
    content: validateContent(f('content'), fields.content, limits),
    memoryType:
      fields.memoryType === undefined
        ? 'episodic'
        : validateMemoryType(f('memoryType'), fields.memoryType),
    scope: fields.scope === undefined ? 'private' : validateScope(f('scope'), fields.scope),
    importance:
      fields.importance === undefined
        ? 0.5
        : validateUnitInterval(f('importance'), fields.importance),
    tags: fields.tags === undefined ? [] : validateTags(f('tags'), fields.tags, limits),
    metadata:
      fields.metadata === undefined ? {} : validateMetadata(f('metadata'), fields.metadata, limits),
    threadId:
      fields.threadId === undefined ? null : validateLabel(f('threadId'), fields.threadId, 256),
    sourceType:
      fields.sourceType === undefined
        ? null
        : validateLabel(f('sourceType'), fields.sourceType, 256),
    expiresAt:
      fields.expiresAt === undefined ? null : validateDate(f('expiresAt'), fields.expiresAt),
    plan: null,
  };
}

const contexts = new WeakMap<MemoryHandle, EngineContext>();

/** The most agents one `share` call grants to. */
const MAX_GRANTEES = 256;

/** The engine context behind a handle. Internal to core. */
export function handleContext(handle: MemoryHandle): EngineContext {
  const context = contexts.get(handle);
  if (context === undefined)
    throw new MnemoError('INVALID_INPUT', 'not a handle created by engine.as()');
  return context;
}

/**
 * Memory operations bound to one principal. Create with `engine.as(agentId)`;
 * no operation takes an agent id, so a caller cannot act as someone else.
 */
export class MemoryHandle {
  /** Fixed for the handle's life: neither reassignable nor mutable, in JavaScript too. */
  declare readonly principal: Principal;

  constructor(context: EngineContext, principal: Principal) {
    contexts.set(this, context);
    Object.defineProperty(this, 'principal', {
      value: Object.freeze({ ...principal }),
      enumerable: true,
      writable: false,
      configurable: false,
    });
  }

  private get context(): EngineContext {
    return handleContext(this);
  }

  /** Visibility of this principal at `now`. */
  private visibility(now: Date): Visibility {
    return { agentId: this.principal.agentId, orgId: this.principal.orgId, now };
  }

  /** Stores a memory; see `RememberInput`. Bad input is `INVALID_INPUT` and writes nothing. */
  async remember(input: RememberInput): Promise<RememberResult> {
    return this.context.calls.run(async () => {
      const draft = draftFrom(input, this.context.limits, '');
      const [result] = await writeRecords(this, [draft], this.context.clock.now());
      return result as RememberResult;
    });
  }

  /**
   * Stores many memories: every input is validated before anything is written
   * (a bad one fails the call with `INVALID_INPUT` naming its index, e.g.
   * `inputs[3].content`), then records are embedded in batches and written
   * with their audit events in one transaction per 500 records, each chunk
   * embedded while the one before it is written. Results are in input
   * order; duplicates (of live records or of earlier inputs) return the
   * first record's id with `deduplicated: true`.
   */
  async rememberMany(inputs: readonly RememberInput[]): Promise<RememberResult[]> {
    return this.context.calls.run(async () => {
      const { limits, clock } = this.context;
      const drafts = validateArray('inputs', inputs, 100_000).map((input, index) =>
        draftFrom(input, limits, `inputs[${index}].`),
      );
      return writeRecords(this, drafts, clock.now(), (index) => `inputs[${index}].expiresAt`);
    });
  }

  /** Finds memories; see `RecallInput`. */
  async recall(input: RecallInput): Promise<RecallResult> {
    return this.context.calls.run(async () => {
      const { store, embedder, limits, clock, laneWeights, readAuditing } = this.context;
      const fields = checkKeys('input', input, [
        'query',
        'limit',
        'strategy',
        'filters',
        'explain',
      ]);
      const query = validateContent('query', fields.query, limits);
      const limit = validateLimit('limit', fields.limit);
      const filters = validateFilters('filters', fields.filters, limits);
      const requested =
        fields.strategy === undefined
          ? 'auto'
          : (['lexical', 'semantic', 'hybrid', 'auto'] as const).find((s) => s === fields.strategy);
      if (requested === undefined)
        throw invalidInput('strategy', 'must be one of lexical, semantic, hybrid, auto');
      if (fields.explain !== undefined && typeof fields.explain !== 'boolean') {
        throw invalidInput('explain', 'must be a boolean');
      }
      const strategy =
        requested === 'auto' ? (embedder.semantic ? 'hybrid' : 'lexical') : requested;
      if (strategy !== 'lexical' && !embedder.semantic) {
        throw new MnemoError(
          'EMBEDDER_NOT_CONFIGURED',
          `${strategy} recall needs a semantic embedder; the engine has the no-op embedder`,
        );
      }

      const now = clock.now();
      const visibility = this.visibility(now);
      const terms = queryTerms(query);
      const depth = strategy === 'hybrid' ? Math.max(limit * 3, 30) : limit;
      const searchSemantic = async (): Promise<ScoredRecord[]> => {
        const [vector] = (await embedTexts(embedder, [query])) as [Float32Array];
        const size = await storeEmbeddingDimensions(store);
        if (size !== null && size !== vector.length) throw dimensionMismatch(size, vector.length);
        return size === null
          ? []
          : store.searchVector({ visibility, filters, vector, limit: depth });
      };
      // A hybrid recall's two searches run at once: each store reads on its own connection.
      // Both settle before the call does, so that engine.close never closes the store under one.
      const [lexical, semantic] = await allSettled([
        strategy !== 'semantic' && terms.length > 0
          ? store.searchLexical({ visibility, filters, terms, limit: depth })
          : undefined,
        strategy !== 'lexical' ? searchSemantic() : undefined,
      ]);

      let hits: RecallHit[];
      if (strategy === 'hybrid') {
        const candidates = new Map<string, MemoryRecord>();
        for (const { record } of [...(lexical ?? []), ...(semantic ?? [])])
          candidates.set(record.id, record);
        const lanes: Partial<Record<Lane, ScoredRecord[]>> = {
          semantic: semantic ?? [],
          recency: recencyLane([...candidates.values()]),
        };
        if (lexical !== undefined) lanes.lexical = lexical;
        hits = fuseLanes(lanes, laneWeights)
          .slice(0, limit)
          .map(({ record, score, lanes: explain }) => ({ record, score, explain }));
      } else {
        const lane = strategy === 'lexical' ? 'lexical' : 'semantic';
        hits = ((strategy === 'lexical' ? lexical : semantic) ?? []).map(
          ({ record, score }, index) => ({
            record,
            score,
            explain: { [lane]: { rank: index + 1, score } },
          }),
        );
      }
      if (fields.explain !== true) for (const hit of hits) delete hit.explain;

      if (readAuditing) {
        const ids = hits.map((hit) => hit.record.id);
        await store.transaction(async (tx) => {
          if (ids.length > 0) await tx.touch(ids, now);
          await appendAudit(this, tx, now, 'recall', ids, {
            strategy,
            limit,
            queryHash: sha256Hex(query),
          });
        });
      }
      return { strategy, hits };
    });
  }

  /** The record with this id, if the caller may see it; else `NOT_FOUND` (also for plans' ids it cannot see). */
  async get(id: string): Promise<MemoryRecord> {
    return this.context.calls.run(async () => {
      const recordId = validateLabel('id', id, 256);
      const [found] = await this.context.store.get(this.visibility(this.context.clock.now()), [
        recordId,
      ]);
      if (found === undefined) throw notFound(recordId);
      return found.record;
    });
  }

  /**
   * The records among `ids` the caller may see, in the order of `ids` (each
   * once); invisible and missing ids are left out. One store round trip.
   */
  async getMany(ids: readonly string[]): Promise<MemoryRecord[]> {
    return this.context.calls.run(() => getVisible(this, ids));
  }

  /** Forgets records by ids or by filters, atomically; see `ForgetInput`. */
  async forget(input: ForgetInput): Promise<ForgetResult> {
    return this.context.calls.run(async () => {
      const { store, clock, limits } = this.context;
      const fields = checkKeys('input', input, ['ids', 'filters', 'mode']);
      const mode =
        fields.mode === undefined
          ? 'soft'
          : (['soft', 'hard', 'redact'] as const).find((m) => m === fields.mode);
      if (mode === undefined) throw invalidInput('mode', 'must be one of soft, hard, redact');
      if ((fields.ids === undefined) === (fields.filters === undefined)) {
        throw invalidInput('input', 'give exactly one of ids or filters');
      }
      const ids =
        fields.ids === undefined
          ? undefined
          : [
              ...new Set(
                validateArray('ids', fields.ids, 10_000).map((id, i) =>
                  validateLabel(`ids[${i}]`, id, 256),
                ),
              ),
            ];
      if (ids !== undefined && ids.length === 0) throw invalidInput('ids', 'must not be empty');
      const filters =
        fields.filters === undefined
          ? undefined
          : validateFilters('filters', fields.filters, limits);
      if (filters !== undefined && Object.keys(filters).length === 0) {
        throw invalidInput(
          'filters',
          'must hold at least one filter (forgetting everything needs explicit ids)',
        );
      }

      const now = clock.now();
      const visibility = this.visibility(now);
      return store.transaction(async (tx) => {
        let targets: VisibleRecord[];
        if (ids !== undefined) {
          targets = await tx.get(visibility, ids);
          const found = new Map(targets.map((target) => [target.record.id, target]));
          for (const id of ids) {
            const target = found.get(id);
            if (target === undefined) throw notFound(id);
            if (permissionLevel(target.permission) < permissionLevel('delete'))
              throw denied(id, 'delete');
          }
        } else {
          targets = (await tx.list({ visibility, filters: filters ?? {} })).filter(
            (target) => permissionLevel(target.permission) >= permissionLevel('delete'),
          );
        }
        const forgotten = targets.map((target) => target.record.id).sort();
        if (forgotten.length === 0) return { mode, forgotten };
        if (mode === 'redact') await tx.redactRecords(forgotten, REDACTED_CONTENT, now);
        else await tx.deleteRecords(forgotten, mode, now);
        const records = new Map(targets.map(({ record }) => [record.id, record]));
        // A redacted record keeps its contentHash, which no longer covers what is left of it:
        // the hash of the record as redacted is recorded, so `verifyRecords` can check the rest.
        const redactedHash = (id: string) => {
          const record = records.get(id);
          return record === undefined
            ? null
            : contentHash({ ...record, content: REDACTED_CONTENT, metadata: {} });
        };
        await appendAudit(this, tx, now, 'forget', forgotten, {
          mode,
          contentHashes: forgotten.map((id) => records.get(id)?.contentHash ?? null),
          ...(mode === 'redact' ? { redactedHashes: forgotten.map(redactedHash) } : {}),
        });
        return { mode, forgotten };
      });
    });
  }

  /** Grants a permission on a record to other agents of the record's org. */
  async share(input: ShareInput): Promise<ShareResult> {
    return this.context.calls.run(async () => {
      const { store, clock } = this.context;
      const fields = checkKeys('input', input, ['recordId', 'with', 'permission', 'expiresAt']);
      const recordId = validateLabel('recordId', fields.recordId, 256);
      const grantees = [
        ...new Set(
          validateArray('with', fields.with, MAX_GRANTEES).map((id, i) =>
            validateId(`with[${i}]`, id),
          ),
        ),
      ];
      if (grantees.length === 0) throw invalidInput('with', 'must name at least one agent');
      if (grantees.includes(this.principal.agentId))
        throw invalidInput('with', 'must not name the caller');
      const permission =
        fields.permission === undefined
          ? 'read'
          : validatePermission('permission', fields.permission);
      const expiresAt =
        fields.expiresAt === undefined ? null : validateDate('expiresAt', fields.expiresAt);
      const now = clock.now();
      if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) {
        throw invalidInput('expiresAt', 'must be in the future');
      }
      return store.transaction(async (tx) => {
        const [target] = await tx.get(this.visibility(now), [recordId]);
        if (target === undefined) throw notFound(recordId);
        if (permissionLevel(target.permission) < permissionLevel('share'))
          throw denied(recordId, 'share');
        if (permissionLevel(permission) > permissionLevel(target.permission))
          throw denied(recordId, permission);
        if (target.record.scope === 'private') {
          throw invalidInput(
            'recordId',
            'a private record cannot be shared; remember it with scope "shared"',
          );
        }
        await checkRegrants(tx, this.principal, target, grantees, now);
        await tx.putGrants(
          grantees.map((agentId) => ({
            recordId,
            granteeAgentId: agentId,
            granteeOrgId: target.record.orgId,
            permission,
            grantedBy: principalKey(this.principal),
            createdAt: now,
            expiresAt,
          })),
        );
        await appendAudit(this, tx, now, 'share', [recordId], {
          grantees,
          permission,
          expiresAt: expiresAt?.toISOString() ?? null,
        });
        return { recordId, permission, grantees, expiresAt };
      });
    });
  }
}

/** `handle.getMany(ids)`, outside the engine's count of calls (for a caller that is one). */
export async function getVisible(
  handle: MemoryHandle,
  ids: readonly string[],
): Promise<MemoryRecord[]> {
  const { store, clock } = handleContext(handle);
  const wanted = [
    ...new Set(
      validateArray('ids', ids, 10_000).map((id, i) => validateLabel(`ids[${i}]`, id, 256)),
    ),
  ];
  if (wanted.length === 0) return [];
  const { agentId, orgId } = handle.principal;
  const found = await store.get({ agentId, orgId, now: clock.now() }, wanted);
  const byId = new Map(found.map((visible) => [visible.record.id, visible.record]));
  return wanted.flatMap((id) => byId.get(id) ?? []);
}

/** Appends one audit event for the handle's principal inside `tx`. */
export function appendAudit(
  handle: MemoryHandle,
  tx: StoreTx,
  at: Date,
  op: AuditOp,
  recordIds: string[],
  details: JsonObject,
): Promise<void> {
  return appendAuditEntries(tx, handleContext(handle).ids, handle.principal, at, [
    { op, recordIds, details },
  ]);
}

function notFound(id: string): MnemoError {
  return new MnemoError('NOT_FOUND', `no record ${id} visible to the caller`, { details: { id } });
}

/**
 * A grant replaces the grantee's existing one, so changing what an agent
 * already holds takes more than the right to share: only the owner, or a
 * caller whose permission is higher than the grantee's, may do it. Otherwise
 * a holder of `share` could lower or revoke (by a near expiry) an `admin`.
 */
async function checkRegrants(
  tx: StoreTx,
  caller: Principal,
  target: VisibleRecord,
  grantees: readonly string[],
  now: Date,
): Promise<void> {
  const { record } = target;
  if (record.agentId === caller.agentId && record.orgId === caller.orgId) return;
  const level = permissionLevel(target.permission);
  for (const grantee of grantees) {
    const [held] = await tx.get({ agentId: grantee, orgId: record.orgId, now }, [record.id]);
    if (held !== undefined && permissionLevel(held.permission) >= level) {
      throw new MnemoError(
        'PERMISSION_DENIED',
        `${grantee} holds ${held.permission} on ${record.id}: only the owner or a higher permission than the caller's ${target.permission} can change it`,
        { details: { id: record.id, grantee, permission: held.permission } },
      );
    }
  }
}

function denied(id: string, permission: Permission): MnemoError {
  return new MnemoError('PERMISSION_DENIED', `the caller lacks ${permission} permission on ${id}`, {
    details: { id, permission },
  });
}

/**
 * `Promise.all` that settles only once every promise has: then the first
 * failure, in order, is thrown.
 */
async function allSettled<T extends readonly unknown[] | []>(
  promises: T,
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const outcomes = await Promise.allSettled(promises);
  for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
  return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}
