import type { TermFrequency } from '../analyzer.js';
import type { AuditEvent, AuditHead } from '../audit/audit-event.js';
import type { MemoryRecord, MemoryType, Permission, Scope } from '../records.js';

/**
 * Who is asking, and when. Every read takes one and must apply it inside the
 * query (before ranking and limits), so that a record the caller may not see
 * can neither appear nor change what does appear.
 *
 * A live record (`deletedAt` null and `expiresAt` null or after `now`) is
 * visible when any of these holds:
 * - the caller owns it: same `agentId` and same `orgId` (null equals null);
 * - its scope is `global`;
 * - its scope is `public` and its `orgId` equals the caller's (null equals null);
 * - its scope is `shared` and the caller holds a grant on it (same agent id and
 *   org id) whose `expiresAt` is null or after `now`.
 */
export interface Visibility {
  readonly agentId: string;
  readonly orgId: string | null;
  readonly now: Date;
}

/**
 * Filters on top of visibility. Every member is optional; absent means "any".
 * Arrays are non-empty when present (the engine refuses an empty
 * `memoryTypes`, `scopes` or `tagsAny`, which no record passes, and drops an
 * empty `tagsAll`, which every record passes).
 */
export interface RecordFilters {
  /** `memoryType` is one of these. */
  readonly memoryTypes?: readonly MemoryType[];
  /** `scope` is one of these. */
  readonly scopes?: readonly Scope[];
  /** `tags` contains at least one of these. */
  readonly tagsAny?: readonly string[];
  /** `tags` contains all of these. */
  readonly tagsAll?: readonly string[];
  /** `importance >= minImportance`. */
  readonly minImportance?: number;
  /** `createdAt >= createdAfter`. */
  readonly createdAfter?: Date;
  /** `createdAt < createdBefore`. */
  readonly createdBefore?: Date;
  /** `threadId` equals this. */
  readonly threadId?: string;
}

/** A visible record and the strongest permission the caller holds on it. */
export interface VisibleRecord {
  readonly record: MemoryRecord;
  /** `admin` for the owner; else the strongest live grant; else `read` (public or global). */
  readonly permission: Permission;
}

export interface ScoredRecord {
  readonly record: MemoryRecord;
  readonly score: number;
}

/** Everything the store persists for a new record; all of it computed by core. */
export interface NewRecord {
  /**
   * Persisted exactly as given, every field (a new record has `accessCount` 0
   * and `lastAccessedAt` and `deletedAt` null; an imported one may not).
   */
  readonly record: MemoryRecord;
  /** Dedup key: equal keys mean "the same memory" while the older one is live. */
  readonly dedupKey: string;
  /** True when the record carries the plan tag. Plans never appear in `searchLexical`, `searchVector` or `list` unless asked for. */
  readonly isPlan: boolean;
  /** Postings for BM25: distinct terms of the content with their frequencies. */
  readonly terms: readonly TermFrequency[];
  /** Number of terms in the content (BM25 document length). */
  readonly docLength: number;
  /** A plan's signature tokens (sorted, distinct), indexed for `findPlanCandidates`; null for other records. */
  readonly planTokens: readonly string[] | null;
}

export interface Grant {
  readonly recordId: string;
  readonly granteeAgentId: string;
  readonly granteeOrgId: string | null;
  readonly permission: Permission;
  /** Principal key of the granting agent. */
  readonly grantedBy: string;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
}

export interface LexicalQuery {
  readonly visibility: Visibility;
  readonly filters: RecordFilters;
  /** Distinct analyzed query terms (see `queryTerms`); non-empty. */
  readonly terms: readonly string[];
  readonly limit: number;
}

export interface VectorQuery {
  readonly visibility: Visibility;
  readonly filters: RecordFilters;
  readonly vector: Float32Array;
  readonly limit: number;
}

export interface ListQuery {
  readonly visibility: Visibility;
  readonly filters: RecordFilters;
  /** Include plan records too (default false). */
  readonly includePlans?: boolean;
  /** Only records whose id sorts after this one (keyset paging). */
  readonly afterId?: string;
  /** At most this many; absent means all. */
  readonly limit?: number;
}

export interface PlanCandidateQuery {
  readonly visibility: Visibility;
  /** The query's signature tokens; non-empty. */
  readonly tokens: readonly string[];
  /** Only plans with at least this many signature tokens. */
  readonly minTokens: number;
  /** Only plans with at most this many signature tokens. */
  readonly maxTokens: number;
  /**
   * Only plans sharing at least this many tokens with `tokens` (1 ≤ minShared
   * ≤ tokens.length; default 1). A plan reaching Jaccard similarity t against a query of
   * |A| tokens shares at least ⌈t·|A|⌉ of them, so any |A| − minShared + 1 of
   * the query's tokens (the store picks its rarest) find every such plan.
   */
  readonly minShared?: number;
}

/**
 * What replays taught about a plan, kept by the store beside the plan record
 * (not in it: the record is hashed and its audit events prove what it held).
 */
export interface PlanStats {
  readonly planId: string;
  /** Exponential moving average of the reported outcomes, seeded with the plan's own score. */
  readonly runningOutcome: number;
  /** Outcomes reported so far. */
  readonly replays: number;
  /** Of those, outcomes below the success threshold. */
  readonly failures: number;
  /** When the last outcome was reported. */
  readonly updatedAt: Date;
}

export interface PlanCandidate {
  readonly record: MemoryRecord;
  /** The plan's stored signature tokens, sorted and distinct. */
  readonly signatureTokens: readonly string[];
  /** The plan's stats, or null while no outcome was reported. */
  readonly stats: PlanStats | null;
}

export interface AuditPage {
  /** Continue after this event (chain, then seq order). Absent: from the start. */
  readonly after?: { readonly chain: string; readonly seq: number };
  readonly limit: number;
}

/** What differs between stores. The conformance suite adapts to it. */
export interface StoreCapabilities {
  /** Human-readable store name, for messages. */
  readonly name: string;
  /** Several processes may open the same database at once. */
  readonly multiProcess: boolean;
}

/**
 * Reads. Available on the store (outside any transaction) and on a `StoreTx`
 * (seeing that transaction's own writes).
 */
export interface StoreReader {
  /**
   * The visible records among `ids`, in no particular order; invisible and
   * missing ids are simply absent. Includes plans.
   */
  get(visibility: Visibility, ids: readonly string[]): Promise<VisibleRecord[]>;
  /**
   * Visible records matching `filters`, ordered by id ascending. Plans only
   * with `includePlans`.
   */
  list(query: ListQuery): Promise<VisibleRecord[]>;

  /** The size every embedding of the store has, or null before the first one is stored. */
  embeddingDimensions(): Promise<number | null>;
}

/**
 * The persistence port. A store is a translation layer: every decision that
 * must be identical across stores (validation, hashing, analysis, visibility
 * rule, audit chaining) is made by core and handed over as values.
 *
 * Lifecycle: the factory does no I/O; `init()` opens and migrates; `close()`
 * releases everything and is idempotent. Any method called before `init()` or
 * after `close()` throws `STORE_UNAVAILABLE`.
 *
 * Errors: every method throws only `MnemoError` (driver errors are mapped in
 * one place per store); a lost or unreachable database is `STORE_UNAVAILABLE`.
 */
export interface MemoryStore extends StoreReader {
  readonly capabilities: StoreCapabilities;

  /**
   * Opens the database and applies pending migrations, in version order, each
   * in its own transaction. Safe to call again (a no-op once done).
   */
  init(): Promise<void>;

  /**
   * Releases connections and files. Idempotent; waits for the transactions and
   * reads running on the database; a call it does not wait for throws
   * `STORE_UNAVAILABLE`.
   */
  close(): Promise<void>;

  /**
   * Runs `fn` in one ACID transaction and commits when it resolves; rolls back
   * and rethrows when it rejects. Nothing `fn` wrote is visible to other
   * readers before the commit. Concurrent calls are allowed: the store
   * serializes or isolates them so that the result equals some serial order.
   * `fn` must not use the tx after it settles.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;

  /**
   * BM25 over `terms` among the visible, filtered, non-plan records.
   * Collection statistics (record count N, mean length avgdl, document
   * frequency df per term) are taken over that same visible, filtered set.
   * score = Σ over query terms t present in the record of
   *   ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5)) · tf·(k1 + 1) / (tf + k1·(1 − b + b·len/avgdl))
   * with k1 = `BM25_K1`, b = `BM25_B`, rounded to 10 decimal places (so
   * last-bit differences between databases become ties). Records matching no
   * term are absent. Ordered by score descending, then id ascending (byte
   * order); at most `limit`.
   */
  searchLexical(query: LexicalQuery): Promise<ScoredRecord[]>;

  /**
   * Cosine similarity between `vector` (of the store's embedding size: core
   * checks) and the embeddings of the visible, filtered, non-plan records,
   * computed in double precision and rounded to 10 decimal places. Ordered by score
   * descending, then id ascending; at most `limit`.
   */
  searchVector(query: VectorQuery): Promise<ScoredRecord[]>;

  /**
   * Every visible, live plan that shares at least `minShared` tokens with
   * `tokens` and whose token count lies in [minTokens, maxTokens], with its
   * stats. Exact: no sampling and no window, so every store returns the same
   * set; order unspecified. Stores answer through an index of the tokens
   * (probing the query's rarest ones), not by scanning every plan.
   */
  findPlanCandidates(query: PlanCandidateQuery): Promise<PlanCandidate[]>;

  /** Audit events ordered by chain, then seq; at most `limit`. */
  readAudit(page: AuditPage): Promise<AuditEvent[]>;

  /** The recorded head (last seq and hash) of every chain, ordered by chain. */
  auditHeads(): Promise<AuditHead[]>;

  /**
   * Every record, whatever its owner, scope, deletion or expiry, plans
   * included, ordered by id (byte order), after `afterId`; at most `limit`.
   * For operators (export, verification), never for an agent's reads.
   */
  scanRecords(page: { readonly afterId?: string; readonly limit: number }): Promise<MemoryRecord[]>;

  /** Every grant (live or expired) on the given records, ordered by record id then grantee. */
  listGrants(recordIds: readonly string[]): Promise<Grant[]>;

  /**
   * The stats of those of the given records that have some (plans with an
   * outcome reported), ordered by plan id (byte order). For export.
   */
  listPlanStats(planIds: readonly string[]): Promise<PlanStats[]>;
}

/**
 * A transaction handle. Valid only inside the `transaction` callback that
 * received it. Where several writers can race, `get` and `list` lock the
 * records they return until the transaction ends and return them as the
 * last writer that held them left them, so a check followed by a change
 * (forget, share) runs one after another with any other such change.
 */
export interface StoreTx extends StoreReader {
  /**
   * For each of `dedupKeys` that a live record (not deleted, not expired at
   * `now`) carries, this transaction's own inserts included: that record's id
   * and content hash. Keys without one are absent from the map.
   */
  findLiveDuplicates(
    dedupKeys: readonly string[],
    now: Date,
  ): Promise<Map<string, { id: string; contentHash: string }>>;

  /**
   * Fixes the store's embedding size to `size` unless one is already fixed;
   * returns the size in force. Concurrent writers (in any process) agree on
   * one size: the first to commit wins and the others see it here.
   */
  fixEmbeddingDimensions(size: number): Promise<number>;

  /** The ids among `ids` that exist as records, whatever their state. */
  findIds(ids: readonly string[]): Promise<string[]>;

  /** Inserts the records with their postings, vectors and plan tokens (none when empty). */
  insertRecords(records: readonly NewRecord[]): Promise<void>;

  /** Marks records deleted at `at` (soft) or removes them with their postings, grants and plan stats (hard). */
  deleteRecords(ids: readonly string[], mode: 'soft' | 'hard', at: Date): Promise<void>;

  /**
   * Replaces content with `content`, empties metadata, drops the embedding,
   * postings, plan tokens and plan stats, and marks the records deleted at `at`.
   * `contentHash` is kept: it still proves what had been stored.
   */
  redactRecords(ids: readonly string[], content: string, at: Date): Promise<void>;

  /**
   * The stats of plan `planId`, or null when none were recorded. Where several
   * writers can race, the store locks them (or the plan) until the
   * transaction ends, so that a read, update and `putPlanStats` of one plan's
   * stats run one after another.
   */
  lockPlanStats(planId: string): Promise<PlanStats | null>;

  /** Inserts or replaces the stats of `stats.planId` (an existing record's id). */
  putPlanStats(stats: PlanStats): Promise<void>;

  /** Inserts grants; an existing grant for the same record and grantee is replaced. */
  putGrants(grants: readonly Grant[]): Promise<void>;

  /** Increments `accessCount` and sets `lastAccessedAt` on the given records. */
  touch(ids: readonly string[], at: Date): Promise<void>;

  /**
   * The head of `chain`, or null for a new chain. Where several writers can
   * race, the store locks the head here until the transaction ends, so the
   * event appended next is chained to a head nobody else can advance meanwhile.
   */
  auditHead(chain: string): Promise<AuditHead | null>;

  /**
   * Appends `events` (already chained and hashed by core, in chain order) and
   * makes the last event of each chain its head.
   */
  appendAudit(events: readonly AuditEvent[]): Promise<void>;
}
