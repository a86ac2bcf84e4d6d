import type { PlanCandidate, PlanCandidateQuery, PlanStats } from '@mnemo/core';
import type { PlanIndex } from './plan-index.js';
import { rowToRecord } from './rows.js';
import type { Row, Session } from './session.js';
import { Params, RECORD_COLUMNS, visiblePredicate } from './sql.js';

// Plan lookup and plan stats. Lookup goes through the in-memory `PlanIndex`;
// SQL then applies visibility to the few ids it names.

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

const MAX_SCALAR_IDS = 256;

/** Fills `index` with every live plan's signature (what `init()` does). */
export async function loadPlanIndex(s: Session, index: PlanIndex): Promise<void> {
  index.clear();
  const rows = await s.all(
    'SELECT id, plan_tokens FROM mnemo_records WHERE is_plan AND plan_tokens IS NOT NULL AND deleted_at IS NULL',
  );
  for (const row of rows) index.add(row.id as string, row.plan_tokens as string[]);
}

export async function findPlanCandidates(
  s: Session,
  index: PlanIndex,
  query: PlanCandidateQuery,
): Promise<PlanCandidate[]> {
  const ids = index.candidates(query);
  if (ids.length === 0) return [];
  const p = new Params();
  // A short list of scalar parameters lets DuckDB look each id up in the primary key;
  // `IN (SELECT unnest(list))` joins against every record instead (~7 ms at 100k).
  const wanted =
    ids.length <= MAX_SCALAR_IDS
      ? ids.map((id) => p.scalar(id)).join(', ')
      : `SELECT unnest(${p.strings(ids)})`;
  const rows = await s.all(
    `SELECT ${RECORD_COLUMNS}, r.plan_tokens, ${STATS_COLUMNS}
     FROM mnemo_records r LEFT JOIN mnemo_plan_stats s ON s.record_id = r.id
     WHERE r.id IN (${wanted}) AND r.is_plan AND ${visiblePredicate(p, query.visibility)}`,
    p,
  );
  return rows.map((row) => ({
    record: rowToRecord(row),
    signatureTokens: row.plan_tokens as string[],
    stats: rowToStats(row),
  }));
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
