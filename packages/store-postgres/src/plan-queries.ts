import type { NewRecord, PlanCandidate, PlanCandidateQuery, PlanStats } from '@mnemo/core';
import { rowToRecord } from './rows.js';
import type { Row, Session } from './session.js';
import { Params, recordColumns, visiblePredicate } from './sql.js';

// Plan lookup, the token document frequencies it plans with, and plan stats.

const STATS_COLUMNS =
  'st.running_outcome, st.replays, st.failures, st.updated_at AS stats_updated_at, st.record_id AS stats_record_id';

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

/**
 * One statement: the query's |A| − minShared + 1 rarest tokens (by the plan
 * token document frequencies; ties by key) probe the GIN index of plan token
 * keys, then the size bounds, the exact shared-token count and visibility
 * filter what it found. Every plan sharing `minShared` tokens holds one of the
 * probed ones, so nothing is missed; probing the rarest keeps the probe to
 * the few plans that can match instead of every plan holding a common word.
 */
export async function findPlanCandidates(
  s: Session,
  query: PlanCandidateQuery,
): Promise<PlanCandidate[]> {
  const minShared = query.minShared ?? 1;
  const p = new Params();
  const tokens = p.texts(query.tokens);
  const rows = await s.all(
    `WITH probe AS MATERIALIZED (
       SELECT array_agg(q.key) AS keys FROM (
         SELECT md5(t) AS key FROM unnest(${tokens}) AS t
         LEFT JOIN ${s.schema}.mnemo_plan_token_df d ON d.key = md5(t)
         ORDER BY coalesce(d.df, 0), md5(t)
         LIMIT ${p.add(Math.max(1, query.tokens.length - minShared + 1), '::int')}
       ) q
     )
     SELECT ${recordColumns(s.schema)}, r.plan_tokens, ${STATS_COLUMNS}
     FROM ${s.schema}.mnemo_records r
     LEFT JOIN ${s.schema}.mnemo_plan_stats st ON st.record_id = r.id
     WHERE r.is_plan AND r.plan_token_keys && (SELECT keys FROM probe)
       AND r.plan_token_count BETWEEN ${p.add(query.minTokens, '::int')} AND ${p.add(query.maxTokens, '::int')}
       AND (SELECT count(*) FROM unnest(r.plan_tokens) AS t WHERE t = ANY(${tokens})) >= ${p.add(minShared, '::int')}
       AND ${visiblePredicate(s.schema, p, query.visibility)}`,
    p,
  );
  return rows.map((row) => ({
    record: rowToRecord(row),
    signatureTokens: row.plan_tokens as string[],
    stats: rowToStats(row),
  }));
}

/**
 * The statement adding `sign` to the document frequency of each token key
 * once per row of `keys` (SQL yielding one key column). Keys are upserted in
 * byte order, so two transactions updating shared keys lock them in the
 * same order.
 */
function addFrequencies(s: Session, keys: string, sign: 1 | -1): string {
  return `INSERT INTO ${s.schema}.mnemo_plan_token_df (key, df)
     SELECT k COLLATE "C", ${sign} * count(*) FROM (${keys}) AS t(k) GROUP BY 1 ORDER BY 1
     ON CONFLICT (key) DO UPDATE SET df = ${s.schema}.mnemo_plan_token_df.df + excluded.df`;
}

/**
 * Counts the signature tokens of newly inserted plans: one statement, which
 * needs no reply before it (see `insertRecords`).
 */
export function countPlanTokens(s: Session, records: readonly NewRecord[]): Promise<unknown> {
  const tokens = records.flatMap((record) => record.planTokens ?? []);
  if (tokens.length === 0) return Promise.resolve();
  const p = new Params();
  return s.exec(addFrequencies(s, `SELECT md5(t) FROM unnest(${p.texts(tokens)}) AS t`, 1), p);
}

/**
 * Uncounts the tokens of plans about to lose their index keys (hard delete,
 * redaction), and drops their stats.
 */
export async function forgetPlans(s: Session, ids: readonly string[]): Promise<void> {
  const p = new Params();
  await s.exec(
    addFrequencies(
      s,
      `SELECT k FROM ${s.schema}.mnemo_records r, unnest(r.plan_token_keys) AS k
       WHERE r.id = ANY(${p.texts(ids)}) AND r.plan_token_keys IS NOT NULL`,
      -1,
    ),
    p,
  );
  await forgetPlanStats(s, ids);
}

/**
 * Drops the stats of plans being forgotten. A soft delete keeps a plan's index
 * keys (and their counts), not its stats: no replay can read them again.
 */
export async function forgetPlanStats(s: Session, ids: readonly string[]): Promise<void> {
  const d = new Params();
  await s.exec(
    `DELETE FROM ${s.schema}.mnemo_plan_stats WHERE record_id = ANY(${d.texts(ids)})`,
    d,
  );
}

/**
 * The plan's stats, with the plan's row locked until the transaction ends.
 * Two statements: a locking join would, after waiting, recheck the plan's row
 * but keep the stats row it read before (READ COMMITTED), losing an update.
 */
export async function lockPlanStats(s: Session, planId: string): Promise<PlanStats | null> {
  const lock = new Params();
  await s.all(
    `SELECT id FROM ${s.schema}.mnemo_records WHERE id = ${lock.add(planId, '::text')} FOR UPDATE`,
    lock,
  );
  const p = new Params();
  const [row] = await s.all(
    `SELECT ${STATS_COLUMNS} FROM ${s.schema}.mnemo_plan_stats st WHERE st.record_id = ${p.add(planId, '::text')}`,
    p,
  );
  return row === undefined ? null : rowToStats(row);
}

export async function listPlanStats(s: Session, planIds: readonly string[]): Promise<PlanStats[]> {
  if (planIds.length === 0) return [];
  const p = new Params();
  const rows = await s.all(
    `SELECT ${STATS_COLUMNS} FROM ${s.schema}.mnemo_plan_stats st
     WHERE st.record_id = ANY(${p.texts(planIds)}) ORDER BY st.record_id COLLATE "C"`,
    p,
  );
  return rows.map((row) => rowToStats(row) as PlanStats);
}

export async function putPlanStats(s: Session, stats: PlanStats): Promise<void> {
  const p = new Params();
  await s.exec(
    `INSERT INTO ${s.schema}.mnemo_plan_stats (record_id, running_outcome, replays, failures, updated_at)
     VALUES (${p.add(stats.planId, '::text')}, ${p.add(stats.runningOutcome, '::float8')},
             ${p.add(stats.replays, '::bigint')}, ${p.add(stats.failures, '::bigint')}, ${p.time(stats.updatedAt)})
     ON CONFLICT (record_id) DO UPDATE SET running_outcome = excluded.running_outcome,
       replays = excluded.replays, failures = excluded.failures, updated_at = excluded.updated_at`,
    p,
  );
}
