import type { PlanStats } from '@mnemo/core';
import type { PlanIndex } from './plan-index.js';
import { rowToGrant, rowToRecord } from './rows.js';
import type { Row, Session } from './session.js';
import { Params, RECORD_COLUMNS } from './sql.js';

// Plan stats, and the loading of the in-memory `PlanIndex` that answers plan lookup.

const STATS_COLUMNS =
  's.running_outcome, s.replays, s.failures, s.updated_at AS stats_updated_at, s.record_id AS stats_record_id';

function rowToStats(row: Row): PlanStats | null {
  if (row.stats_record_id === null || row.stats_record_id === undefined) return null;
  return {
    planId: row.stats_record_id as string,
    runningOutcome: Number(row.running_outcome),
    replays: Number(row.replays),
    failures: Number(row.failures),
    updatedAt: new Date(Number(row.stats_updated_at)),
  };
}

/** Fills `index` with every live plan, its grants and its stats (what `init()` does). */
export async function loadPlanIndex(s: Session, index: PlanIndex): Promise<void> {
  index.clear();
  const live = 'r.is_plan AND r.plan_tokens IS NOT NULL AND r.deleted_at IS NULL';
  for (const row of await s.all(
    `SELECT ${RECORD_COLUMNS}, r.plan_tokens FROM mnemo_records r WHERE ${live}`,
  )) {
    index.add(row.id as string, { tokens: row.plan_tokens as string[], record: rowToRecord(row) });
  }
  for (const row of await s.all(
    `SELECT g.* FROM mnemo_grants g JOIN mnemo_records r ON r.id = g.record_id WHERE ${live}`,
  )) {
    index.grant(rowToGrant(row));
  }
  for (const row of await s.all(`SELECT ${STATS_COLUMNS} FROM mnemo_plan_stats s`)) {
    const stats = rowToStats(row);
    if (stats !== null) index.putStats(stats);
  }
}

/** The plan's stats. No lock needed: one writer connection runs one transaction at a time. */
export async function lockPlanStats(s: Session, planId: string): Promise<PlanStats | null> {
  const p = new Params();
  const [row] = await s.all(
    `SELECT ${STATS_COLUMNS} FROM mnemo_plan_stats s WHERE s.record_id = ${p.scalar(planId)}`,
    p,
  );
  return row === undefined ? null : rowToStats(row);
}

export async function listPlanStats(s: Session, planIds: readonly string[]): Promise<PlanStats[]> {
  if (planIds.length === 0) return [];
  const p = new Params();
  const rows = await s.all(
    `SELECT ${STATS_COLUMNS} FROM mnemo_plan_stats s
     WHERE s.record_id IN (SELECT unnest(${p.strings(planIds)})) ORDER BY s.record_id`,
    p,
  );
  return rows.map((row) => rowToStats(row) as PlanStats);
}

export async function putPlanStats(s: Session, stats: PlanStats): Promise<void> {
  const p = new Params();
  await s.exec(
    `INSERT INTO mnemo_plan_stats (record_id, running_outcome, replays, failures, updated_at)
     VALUES (${p.scalar(stats.planId)}, ${p.scalar(stats.runningOutcome)}, ${p.scalar(stats.replays)},
             ${p.scalar(stats.failures)}, ${p.time(stats.updatedAt)})
     ON CONFLICT (record_id) DO UPDATE SET running_outcome = excluded.running_outcome,
       replays = excluded.replays, failures = excluded.failures, updated_at = excluded.updated_at`,
    p,
  );
}
