import type { Session } from './session.js';
import { Params } from './sql.js';

/**
 * Accesses a process logs before it folds the log into the records: about
 * 400 recalls of ten hits.
 */
export const ACCESS_FOLD_ROWS = 4096;

// A recall's accesses (`touch`) are appended to `mnemo_accesses`, one row per
// record, instead of updating each record's `access_count` and
// `last_accessed_at` in place. That UPDATE wrote a new version of ten whole
// rows (the embedding included) and locked them until the recall's audit
// transaction ended, so concurrent recalls of the same records waited on each
// other. Measured in a recall's transaction at 100,000 records: the UPDATE
// about 1.15 ms p50, the append 0.68-0.85 ms; 800 recalls by 8 agents over
// 10,000 records wrote 16.8-18.2 kB of WAL per recall before, 6.1-6.5 kB
// after. Every read adds the logged accesses of the records it returns (see
// `recordColumns`), and a process that has logged `ACCESS_FOLD_ROWS` of them
// folds the whole log into the records, in one transaction.

/**
 * Logs one access at `at` to each of the records of `ids` that exist (a
 * repeated id counts once), holding a key-share lock on them until the
 * transaction ends: it waits only for a transaction that locked them to
 * change or delete them (see `lockRecords`), and only such a transaction
 * waits for it; recalls of the same records do not wait for each other.
 * A record deleted meanwhile gets no access (its log rows went with it).
 */
export async function logAccesses(s: Session, ids: readonly string[], at: Date): Promise<void> {
  if (ids.length === 0) return;
  const p = new Params();
  // Not prepared: a lookup by many keys (see Session).
  await s.exec(
    `INSERT INTO ${s.schema}.mnemo_accesses (record_id, accessed_at)
     SELECT r.id, ${p.time(at)} FROM ${s.schema}.mnemo_records r
     WHERE r.id = ANY(${p.texts(ids)}) ORDER BY r.id COLLATE "C" FOR KEY SHARE`,
    p,
  );
}

/**
 * Adds the logged accesses to their records' counts and times and deletes
 * them, in one transaction on `s` (a client of its own). The records are
 * locked first, in id order, as every transaction changing records locks
 * them (see `lockRecords`); accesses logged meanwhile to other records stay
 * for the next fold. Readers never see a count twice or lose one: each of
 * their statements reads the log and the records in one snapshot, taken
 * before or after the fold committed.
 */
export function foldAccesses(s: Session): Promise<void> {
  return s.transaction(async () => {
    const locked = await s.all(
      `SELECT id FROM ${s.schema}.mnemo_records
       WHERE id IN (SELECT record_id FROM ${s.schema}.mnemo_accesses)
       ORDER BY id COLLATE "C" FOR NO KEY UPDATE`,
    );
    if (locked.length === 0) return;
    const p = new Params();
    await s.exec(
      `WITH moved AS (
         DELETE FROM ${s.schema}.mnemo_accesses WHERE record_id = ANY(${p.texts(locked.map((row) => row.id as string))})
         RETURNING record_id, seq, accessed_at
       ),
       folded AS (
         SELECT record_id, count(*) AS accesses, (array_agg(accessed_at ORDER BY seq DESC))[1] AS last_at
         FROM moved GROUP BY record_id
       )
       UPDATE ${s.schema}.mnemo_records r
       SET access_count = r.access_count + f.accesses, last_accessed_at = f.last_at
       FROM folded f WHERE r.id = f.record_id`,
      p,
    );
  });
}

/**
 * Rows in the access log, counted up to `atMost`: a process that opens the
 * store folds a log that others, too short-lived to reach a fold, left that
 * long (a record's every read counts its rows in the log).
 */
export async function countLoggedAccesses(s: Session, atMost: number): Promise<number> {
  const p = new Params();
  const [row] = await s.all(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${s.schema}.mnemo_accesses LIMIT ${p.add(atMost, '::int')}) a`,
    p,
  );
  return Number(row?.n ?? 0);
}

/** Deletes the logged accesses of records deleted for good, so that a record given one of their ids later starts from its own count. */
export async function forgetAccesses(s: Session, ids: readonly string[]): Promise<void> {
  const p = new Params();
  await s.exec(`DELETE FROM ${s.schema}.mnemo_accesses WHERE record_id = ANY(${p.texts(ids)})`, p);
}
