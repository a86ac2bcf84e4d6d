import type { Grant, MemoryStore, PlanStats } from './ports/memory-store.js';
import { isPlanRecord, type MemoryRecord } from './records.js';

/** One record as exported: every field, every grant on it and, for a plan, its stats. */
export interface ExportedRecord {
  record: MemoryRecord;
  grants: Grant[];
  /** A plan's outcomes reported so far; absent for other records and for plans without any. */
  planStats?: PlanStats;
}

/**
 * The `pageSize` records after `afterId` (from the first when undefined), in
 * id order, each with its grants and, for a plan, its stats. What an export
 * writes and `verifyRecords` checks.
 */
export async function readRecordPage(
  store: MemoryStore,
  afterId: string | undefined,
  pageSize: number,
): Promise<ExportedRecord[]> {
  const page = await store.scanRecords(
    afterId === undefined ? { limit: pageSize } : { afterId, limit: pageSize },
  );
  if (page.length === 0) return [];
  const grantsOf = new Map<string, Grant[]>();
  for (const grant of await store.listGrants(page.map((record) => record.id))) {
    const of = grantsOf.get(grant.recordId);
    if (of === undefined) grantsOf.set(grant.recordId, [grant]);
    else of.push(grant);
  }
  const plans = page.filter((record) => isPlanRecord(record)).map((record) => record.id);
  const statsOf = new Map(
    (plans.length === 0 ? [] : await store.listPlanStats(plans)).map((stats) => [
      stats.planId,
      stats,
    ]),
  );
  return page.map((record) => {
    const planStats = statsOf.get(record.id);
    return {
      record,
      grants: grantsOf.get(record.id) ?? [],
      ...(planStats === undefined ? {} : { planStats }),
    };
  });
}
