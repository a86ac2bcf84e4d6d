import { BIGINT, VARCHAR } from '@duckdb/node-api';
import type { MemoryRecord } from '@mnemo/core';
import { appendRows } from './append.js';
import type { JournaledTouch } from './journal.js';
import type { Session } from './session.js';
import { Params } from './sql.js';

/**
 * Rows of `mnemo_accesses` at which the store folds them into the records:
 * about 400 recalls of ten hits. Folding that many into a 100,000-record
 * file took 25 ms (UPDATE, DELETE and COMMIT), during which reads wait.
 */
export const ACCESS_FOLD_ROWS = 4096;

/** What a transaction did to access counts, in order: touched records, or deleted them for good. */
export type AccessChange =
  | { kind: 'touch'; ids: readonly string[]; at: Date }
  | { kind: 'forget'; ids: readonly string[] };

interface Pending {
  count: number;
  last: Date;
}

/**
 * The accesses a recall records (`touch`) are appended to `mnemo_accesses`,
 * one row per record, instead of updating each record's `access_count` and
 * `last_accessed_at` in place: in a recall's audit transaction at 100,000
 * records, that UPDATE of ten scattered rows took 3.3–3.9 ms of about 10,
 * the append takes 1.0–1.2 ms. Every so often (`ACCESS_FOLD_ROWS`) and when the
 * file is opened, the log is folded into the records and emptied, in one
 * transaction.
 *
 * This class holds the log's rows not folded yet, per record, and the
 * accesses acknowledged through the journal that the log does not hold yet
 * (a recall's, see "Journal" in the README), and every record the store
 * returns gets both added (`apply`): this process is the file's only
 * writer, so it knows them all, and its reads need no join with the log
 * (which cost 4–5 ms a read) and no wait for the journal. A read must not
 * straddle a fold — rows read before it plus pending accesses cleared after
 * it would lose them — so the store lets no read run during one (see
 * DuckDBStore.read).
 */
export class AccessLog {
  private pending = new Map<string, Pending>();
  // Accesses acknowledged through the journal and not logged in the file yet, per record
  // (see `journaled`). A fold leaves them.
  private readonly journaledById = new Map<string, Pending>();
  private touches = 0;
  /** Rows logged since the last fold (an upper bound: deletes are not subtracted). */
  rows = 0;

  /** The number of the next touch, which orders the log's rows (the last one's time wins). */
  nextTouch(): number {
    this.touches += 1;
    return this.touches;
  }

  /** Takes in a committed transaction's changes. */
  commit(changes: readonly AccessChange[]): void {
    for (const change of changes) {
      if (change.kind === 'forget') {
        for (const id of change.ids) this.pending.delete(id);
        continue;
      }
      this.rows += change.ids.length;
      for (const id of change.ids) add(this.pending, id, change.at);
    }
  }

  /** Takes in a touch acknowledged through the journal, before the file logs it. */
  journaled(ids: readonly string[], at: Date): void {
    for (const id of ids) add(this.journaledById, id, at);
  }

  /** The oldest journaled `touches`, in order, are now logged in the file, committed. */
  logged(touches: readonly { ids: readonly string[]; at: Date }[]): void {
    for (const { ids, at } of touches) {
      this.rows += ids.length;
      for (const id of ids) {
        add(this.pending, id, at);
        const journaled = this.journaledById.get(id);
        if (journaled === undefined) continue;
        // The touches left are later ones: the last time stays theirs.
        journaled.count -= 1;
        if (journaled.count === 0) this.journaledById.delete(id);
      }
    }
  }

  /** Once the log is folded into the records (the journaled accesses are not in it yet). */
  clear(): void {
    this.pending = new Map();
    this.rows = 0;
  }

  /**
   * `record` with its accesses not folded yet: the logged ones, then the
   * journaled ones, then those of `staged` (a transaction's own, uncommitted).
   */
  apply(record: MemoryRecord, staged: readonly AccessChange[] = []): MemoryRecord {
    let pending = this.pending.get(record.id);
    const journaled = this.journaledById.get(record.id);
    if (journaled !== undefined) {
      pending = { count: (pending?.count ?? 0) + journaled.count, last: journaled.last };
    }
    for (const change of staged) {
      if (!change.ids.includes(record.id)) continue;
      if (change.kind === 'forget') pending = undefined;
      else
        pending = {
          count: (pending?.count ?? 0) + 1,
          last: change.at,
        };
    }
    if (pending === undefined) return record;
    return {
      ...record,
      accessCount: record.accessCount + pending.count,
      lastAccessedAt: pending.last,
    };
  }

  /** `items` with their records' accesses added (see `apply`). */
  applyAll<T extends { readonly record: MemoryRecord }>(
    items: readonly T[],
    staged: readonly AccessChange[] = [],
  ): T[] {
    if (this.pending.size === 0 && this.journaledById.size === 0 && staged.length === 0) {
      return [...items];
    }
    return items.map((item) => ({ ...item, record: this.apply(item.record, staged) }));
  }
}

function add(pending: Map<string, Pending>, id: string, at: Date): void {
  const entry = pending.get(id);
  if (entry === undefined) pending.set(id, { count: 1, last: at });
  else {
    entry.count += 1;
    entry.last = at;
  }
}

/** Logs one access at `at` to each of `ids` (distinct), as touch number `touch`. */
export async function logAccesses(
  s: Session,
  ids: readonly string[],
  at: Date,
  touch: number,
): Promise<void> {
  const p = new Params();
  await s.execPrepared(
    `INSERT INTO mnemo_accesses
     SELECT unnest(${p.strings(ids)}), ${p.time(at)}, ${p.scalar(touch)}`,
    p,
  );
}

/** Logs the accesses of journaled `touches` (see `logAccesses`), through one appender. */
export async function logTouches(s: Session, touches: readonly JournaledTouch[]): Promise<void> {
  const rows = touches.flatMap(({ ids, at, touch }) =>
    ids.map((id) => ({ id, at: BigInt(at.getTime()), touch: BigInt(touch) })),
  );
  await appendRows(s, 'mnemo_accesses', [
    { type: VARCHAR, values: rows.map((row) => row.id) },
    { type: BIGINT, values: rows.map((row) => row.at) },
    { type: BIGINT, values: rows.map((row) => row.touch) },
  ]);
}

/** Rows in the access log. */
export async function countLoggedAccesses(s: Session): Promise<number> {
  const [row] = await s.all('SELECT count(*) AS n FROM mnemo_accesses');
  return Number(row?.n ?? 0);
}

/** Adds the log's accesses to the records' counts and times, and empties it (in the caller's transaction). */
export async function foldAccesses(s: Session): Promise<void> {
  await s.exec(
    `UPDATE mnemo_records r
     SET access_count = r.access_count + a.accesses, last_accessed_at = a.last_at
     FROM (
       SELECT record_id, count(*) AS accesses, arg_max(accessed_at, touch) AS last_at
       FROM mnemo_accesses GROUP BY record_id
     ) a
     WHERE r.id = a.record_id`,
  );
  await s.exec('DELETE FROM mnemo_accesses');
}

/** Drops the logged accesses of records deleted for good, so that a record given one of their ids later starts from its own count. */
export async function forgetAccesses(s: Session, ids: readonly string[]): Promise<void> {
  const p = new Params();
  await s.exec(
    `DELETE FROM mnemo_accesses WHERE record_id IN (SELECT unnest(${p.strings(ids)}))`,
    p,
  );
}
