import type {
  Grant,
  MemoryRecord,
  PlanCandidate,
  PlanCandidateQuery,
  PlanStats,
  Visibility,
} from '@mnemo/core';
import { GrantIndex, principalKey } from './grant-index.js';

/** What the index keeps of one live plan: its signature and its record as committed. */
export interface IndexedPlan {
  readonly tokens: readonly string[];
  readonly record: MemoryRecord;
}

/** A copy for a caller, so that nothing it does reaches the index. */
function copyRecord(record: MemoryRecord): MemoryRecord {
  return {
    ...record,
    tags: [...record.tags],
    metadata: structuredClone(record.metadata),
    embedding: record.embedding === null ? null : Float32Array.from(record.embedding),
  };
}

/**
 * Every live plan of the store, in memory: token → plan ids, plan id → its
 * signature and record, grants and stats. A read-write DuckDB file is held by
 * one process, and every write goes through this store's single writer
 * connection, so an index kept in step with those writes (changes applied
 * when their transaction commits) and rebuilt by `init()` is exact.
 *
 * It answers plan lookup without SQL: DuckDB spends milliseconds on any
 * statement that reads a row's list and text columns, and more planning the
 * grant subquery of the visibility predicate, so even a lookup of a few ids
 * by primary key cost 5–15 ms at 100k plans on a busy 2-core machine. The
 * price is memory: a plan's record (about 1 KB with a short payload, plus
 * its embedding if the engine has a semantic embedder) stays in memory while
 * the plan is live.
 */
export class PlanIndex {
  private readonly postings = new Map<string, Set<string>>();
  private readonly plans = new Map<string, IndexedPlan>();
  // Grants on indexed plans.
  private readonly grants = new GrantIndex();
  private readonly stats = new Map<string, PlanStats>();

  get size(): number {
    return this.plans.size;
  }

  clear(): void {
    this.postings.clear();
    this.plans.clear();
    this.grants.clear();
    this.stats.clear();
  }

  add(id: string, plan: IndexedPlan): void {
    this.remove(id);
    this.plans.set(id, { tokens: [...plan.tokens], record: copyRecord(plan.record) });
    for (const token of plan.tokens) {
      let ids = this.postings.get(token);
      if (ids === undefined) {
        ids = new Set();
        this.postings.set(token, ids);
      }
      ids.add(id);
    }
  }

  /** Drops a plan (forgotten, redacted, or never one) with its grants and stats. */
  remove(id: string): void {
    this.grants.delete(id);
    this.stats.delete(id);
    const plan = this.plans.get(id);
    if (plan === undefined) return;
    this.plans.delete(id);
    for (const token of plan.tokens) {
      const ids = this.postings.get(token);
      ids?.delete(id);
      if (ids?.size === 0) this.postings.delete(token);
    }
  }

  /** Mirrors `touch` on indexed plans (the only change a live plan's row can see). */
  touch(ids: readonly string[], at: Date): void {
    for (const id of ids) {
      const plan = this.plans.get(id);
      if (plan === undefined) continue;
      this.plans.set(id, {
        tokens: plan.tokens,
        record: { ...plan.record, accessCount: plan.record.accessCount + 1, lastAccessedAt: at },
      });
    }
  }

  /** Records a grant (replacing one for the same grantee) if it is on an indexed plan. */
  grant(grant: Grant): void {
    if (this.plans.has(grant.recordId)) this.grants.put(grant);
  }

  putStats(stats: PlanStats): void {
    if (this.plans.has(stats.planId)) this.stats.set(stats.planId, stats);
  }

  /** Core's visibility rule (see `Visibility`), for an indexed (so not deleted) plan. */
  private visible(id: string, { record: plan }: IndexedPlan, v: Visibility): boolean {
    const now = v.now.getTime();
    if (plan.deletedAt !== null) return false;
    if (plan.expiresAt !== null && plan.expiresAt.getTime() <= now) return false;
    if (plan.agentId === v.agentId && plan.orgId === v.orgId) return true;
    if (plan.scope === 'global') return true;
    if (plan.scope === 'public') return plan.orgId === v.orgId;
    if (plan.scope !== 'shared') return false;
    return this.grants.live(id, principalKey(v.agentId, v.orgId), now);
  }

  /**
   * The plans visible to the caller whose token count lies in the query's
   * bounds and that share at least `minShared` of its tokens (see
   * `MemoryStore.findPlanCandidates`). Such a plan holds at least one of any
   * |A| − minShared + 1 query tokens, so only the postings of the rarest ones
   * are read; each plan found is then counted exactly.
   */
  candidates(query: PlanCandidateQuery): PlanCandidate[] {
    const wanted = new Set(query.tokens);
    const minShared = query.minShared ?? 1;
    const probe = [...wanted]
      .map((token) => this.postings.get(token))
      .sort((a, b) => (a?.size ?? 0) - (b?.size ?? 0))
      .slice(0, Math.max(1, wanted.size - minShared + 1));
    const seen = new Set<string>();
    const found: PlanCandidate[] = [];
    for (const ids of probe) {
      if (ids === undefined) continue;
      for (const id of ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        const plan = this.plans.get(id) as IndexedPlan;
        const { tokens } = plan;
        if (tokens.length < query.minTokens || tokens.length > query.maxTokens) continue;
        let shared = 0;
        for (const token of tokens) if (wanted.has(token)) shared += 1;
        if (shared >= minShared && this.visible(id, plan, query.visibility)) {
          found.push({
            record: copyRecord(plan.record),
            signatureTokens: [...tokens],
            stats: this.stats.get(id) ?? null,
          });
        }
      }
    }
    return found;
  }
}
