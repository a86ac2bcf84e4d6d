import type { Grant, PlanCandidateQuery, PlanStats, Scope, Visibility } from '@mnemo/core';

/** What the index keeps of one live plan: its signature and what decides who may see it. */
export interface IndexedPlan {
  readonly tokens: readonly string[];
  readonly agentId: string;
  readonly orgId: string | null;
  readonly scope: Scope;
  /** Unix milliseconds, or null. */
  readonly expiresAt: number | null;
}

const granteeKey = (agentId: string, orgId: string | null) => `${orgId ?? ''}\u0000${agentId}`;

/**
 * Every live plan of the store, in memory: token → plan ids, plan id → its
 * signature, owner, scope, expiry, grants and stats. A read-write DuckDB file
 * is held by one process, and every write goes through this store's single
 * writer connection, so an index kept in step with those writes (changes
 * applied when their transaction commits) and rebuilt by `init()` is exact.
 *
 * It answers which plans a caller can see that can match a query, without
 * SQL: DuckDB spends ~1 ms on any statement and several more on the grant
 * subquery of the visibility predicate, so a SQL lookup lands near 20 ms at
 * 100k plans. SQL then reads only the records of those few plans.
 */
export class PlanIndex {
  private readonly postings = new Map<string, Set<string>>();
  private readonly plans = new Map<string, IndexedPlan>();
  // Grants on indexed plans: plan id → grantee key → grant expiry (ms or null).
  private readonly grants = new Map<string, Map<string, number | null>>();
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
    this.plans.set(id, plan);
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

  /** Records a grant (replacing one for the same grantee) if it is on an indexed plan. */
  grant(grant: Grant): void {
    if (!this.plans.has(grant.recordId)) return;
    let byGrantee = this.grants.get(grant.recordId);
    if (byGrantee === undefined) {
      byGrantee = new Map();
      this.grants.set(grant.recordId, byGrantee);
    }
    byGrantee.set(
      granteeKey(grant.granteeAgentId, grant.granteeOrgId),
      grant.expiresAt?.getTime() ?? null,
    );
  }

  putStats(stats: PlanStats): void {
    if (this.plans.has(stats.planId)) this.stats.set(stats.planId, stats);
  }

  statsOf(id: string): PlanStats | null {
    return this.stats.get(id) ?? null;
  }

  /** Core's visibility rule (see `Visibility`), for an indexed (so not deleted) plan. */
  private visible(id: string, plan: IndexedPlan, v: Visibility): boolean {
    const now = v.now.getTime();
    if (plan.expiresAt !== null && plan.expiresAt <= now) return false;
    if (plan.agentId === v.agentId && plan.orgId === v.orgId) return true;
    if (plan.scope === 'global') return true;
    if (plan.scope === 'public') return plan.orgId === v.orgId;
    if (plan.scope !== 'shared') return false;
    const expires = this.grants.get(id)?.get(granteeKey(v.agentId, v.orgId));
    return expires !== undefined && (expires === null || expires > now);
  }

  /**
   * Ids of the plans visible to the caller whose token count lies in the
   * query's bounds and that share at least `minShared` of its tokens. Such a
   * plan holds at least one of any |A| − minShared + 1 query tokens, so only
   * the postings of the rarest ones are read; each plan found is then counted
   * exactly.
   */
  candidates(query: PlanCandidateQuery): string[] {
    const wanted = new Set(query.tokens);
    const minShared = query.minShared ?? 1;
    const probe = [...wanted]
      .map((token) => this.postings.get(token))
      .sort((a, b) => (a?.size ?? 0) - (b?.size ?? 0))
      .slice(0, Math.max(1, wanted.size - minShared + 1));
    const seen = new Set<string>();
    const found: string[] = [];
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
        if (shared >= minShared && this.visible(id, plan, query.visibility)) found.push(id);
      }
    }
    return found;
  }
}
