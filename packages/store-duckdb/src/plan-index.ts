import type { PlanCandidateQuery } from '@mnemo/core';

/**
 * The plans' signatures, in memory: token → plan ids, plan id → tokens. A
 * read-write DuckDB file is held by one process, and every write goes through
 * this store's single writer connection, so an index kept in step with those
 * writes (changes applied when their transaction commits) and rebuilt by
 * `init()` is exact. It answers which plans can match a query; visibility,
 * expiry and the records themselves are still read from SQL, for those few
 * ids only. (A SQL-only lookup costs DuckDB ~1 ms per point query and several
 * ms per `IN` list, so two steps land near 20 ms at 100k plans; this lands
 * near 1 ms.)
 */
export class PlanIndex {
  private readonly postings = new Map<string, Set<string>>();
  private readonly plans = new Map<string, readonly string[]>();

  get size(): number {
    return this.plans.size;
  }

  clear(): void {
    this.postings.clear();
    this.plans.clear();
  }

  add(id: string, tokens: readonly string[]): void {
    this.remove(id);
    this.plans.set(id, tokens);
    for (const token of tokens) {
      let ids = this.postings.get(token);
      if (ids === undefined) {
        ids = new Set();
        this.postings.set(token, ids);
      }
      ids.add(id);
    }
  }

  remove(id: string): void {
    const tokens = this.plans.get(id);
    if (tokens === undefined) return;
    this.plans.delete(id);
    for (const token of tokens) {
      const ids = this.postings.get(token);
      ids?.delete(id);
      if (ids?.size === 0) this.postings.delete(token);
    }
  }

  /**
   * Ids of the indexed plans whose token count lies in the query's bounds and
   * that share at least `minShared` of its tokens. Such a plan holds at least
   * one of any |A| − minShared + 1 query tokens, so only the postings of the
   * rarest ones are read; each plan found is then counted exactly.
   */
  candidates(query: Omit<PlanCandidateQuery, 'visibility'>): string[] {
    const wanted = new Set(query.tokens);
    const minShared = query.minShared ?? 1;
    const probe = [...wanted]
      .map((token) => ({ token, ids: this.postings.get(token) }))
      .sort((a, b) => (a.ids?.size ?? 0) - (b.ids?.size ?? 0))
      .slice(0, Math.max(1, wanted.size - minShared + 1));
    const seen = new Set<string>();
    const found: string[] = [];
    for (const { ids } of probe) {
      if (ids === undefined) continue;
      for (const id of ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        const tokens = this.plans.get(id) as readonly string[];
        if (tokens.length < query.minTokens || tokens.length > query.maxTokens) continue;
        let shared = 0;
        for (const token of tokens) if (wanted.has(token)) shared += 1;
        if (shared >= minShared) found.push(id);
      }
    }
    return found;
  }
}
