import type { ScoredRecord, VectorQuery } from '@mnemo/core';
import { unpackArray, unpackVector } from './binary.js';
import type { CachedRecords, FeedPosition } from './cached-records.js';
import { rowToRecord } from './rows.js';
import { roundedCosine } from './scores.js';
import type { Row, Session } from './session.js';
import { filterPredicate, Params, recordColumns, visiblePredicate } from './sql.js';
import type { CachedRecord, VectorCache } from './vector-cache.js';

/** Records read per statement of the first load. */
const LOAD_PAGE = 10_000;

/**
 * The columns a cached record needs, the embedding in the type's binary
 * form (`vector_send` or `array_send`): exact float32 values, sent as hex
 * (about three quarters of the decimal text's bytes) and decoded without
 * parsing a float.
 */
const columns = (pgvector: boolean) =>
  `r.id, r.agent_id, r.org_id, r.scope, r.expires_at, ${pgvector ? 'vector_send' : 'array_send'}(r.embedding) AS embedding`;

/** The statement's snapshot as a `FeedPosition`, for a query over `snap` (see `SNAPSHOT`). */
export const SNAPSHOT = `snap AS MATERIALIZED (SELECT pg_current_snapshot() AS s)`;
export function positionColumns(s: Session, p: Params): string {
  return `(SELECT pg_snapshot_xmax(s)::text FROM snap) AS xmax,
    (SELECT array(SELECT pg_snapshot_xip(s)::text) FROM snap) AS xip,
    concat_ws(' ', extract(epoch FROM pg_postmaster_start_time()),
      ${p.add(`${s.schema}.mnemo_records`, '::regclass')}::oid,
      coalesce((SELECT token FROM ${s.schema}.mnemo_cache_epoch), gen_random_uuid()::text)) AS run`;
}

/**
 * The records, aliased `r`, that a cache at `from` has not seen and that are
 * live in this statement's snapshot (a query over `snap`, see `SNAPSHOT`):
 * those written by the transactions unfinished at `from`. Their ids lie
 * below this snapshot's xmax, the closed range the `written_xid` index
 * serves (an open one, without statistics on the column, was estimated at a
 * third of the table and scanned it all: 115 ms at 100,000 records); and a
 * `written_xid` above it, copied by a restore from another cluster, is not
 * read again by every refresh.
 */
export function unseenRecords(p: Params, from: FeedPosition): string {
  return `(r.written_xid BETWEEN ${p.add(from.from, '::xid8')} AND (SELECT pg_snapshot_xmax(s) FROM snap)
      OR r.written_xid = ANY(${p.add(from.pending, '::xid8[]')}))
    AND NOT r.is_plan AND r.deleted_at IS NULL`;
}

export function toPosition(row: Row | undefined): FeedPosition {
  if (row === undefined) throw new Error('the snapshot query returned no row');
  return { from: String(row.xmax), pending: (row.xip as string[]) ?? [], run: String(row.run) };
}

/**
 * Where a cache's first load starts reading the feed: this statement's
 * snapshot, with the token of this run written first (see migration 8),
 * unless a process wrote it already. Looked for before it is written, so
 * that a role that may only read loads its caches once a writer has.
 */
export async function feedStart(s: Session): Promise<FeedPosition> {
  const [written] = await s.all(`SELECT 1 AS written FROM ${s.schema}.mnemo_cache_epoch`);
  if (written === undefined) {
    await s.exec(
      `INSERT INTO ${s.schema}.mnemo_cache_epoch (token) VALUES (gen_random_uuid()::text)
       ON CONFLICT DO NOTHING`,
    );
  }
  const p = new Params();
  const [row] = await s.all(`WITH ${SNAPSHOT} SELECT ${positionColumns(s, p)}`, p);
  return toPosition(row);
}

/**
 * Loads every live, non-plan record into an empty cache, a page of
 * `LOAD_PAGE` at a time in id order: `statement(where)` reads a page of
 * records `r` chosen by `where` (its condition, order and limit), each row
 * with the record's `id`, which `add` takes into the cache. The position is
 * the first statement's snapshot: a record of a transaction that it did not
 * see is read again by the next refresh, and one that it saw is read by a
 * page, unless deleted since. Stops before the next page once `stopped()`
 * (the store closing), the cache then unusable.
 */
export async function loadPages(
  s: Session,
  cache: CachedRecords,
  stopped: () => boolean,
  statement: (where: string) => string,
  add: (rows: readonly Row[]) => void,
): Promise<void> {
  const start = await feedStart(s);
  let after: string | null = null;
  while (!stopped()) {
    const p = new Params();
    const rows = await s.all(
      statement(
        `WHERE NOT r.is_plan AND r.deleted_at IS NULL
           ${after === null ? '' : `AND r.id > ${p.add(after, '::text')}`}
         ORDER BY r.id LIMIT ${p.add(LOAD_PAGE, '::int')}`,
      ),
      p,
    );
    add(rows);
    if (rows.length < LOAD_PAGE) break;
    after = String((rows[rows.length - 1] as Row).id);
  }
  cache.position = start;
}

/** Loads the vector cache (see `loadPages`). */
export function loadVectorCache(
  s: Session,
  cache: VectorCache,
  pgvector: boolean,
  stopped: () => boolean,
): Promise<void> {
  return loadPages(
    s,
    cache,
    stopped,
    (where) => `SELECT ${columns(pgvector)} FROM ${s.schema}.mnemo_records r ${where}`,
    (rows) => {
      for (const record of rows) cache.add(toCached(record, pgvector));
    },
  );
}

/**
 * Adds the records written by the transactions that had not finished at the
 * cache's position (see VectorCache), and moves the position to this
 * statement's snapshot. False, changing nothing, when the position was
 * taken on another run of the transaction ids (`FeedPosition.run`): the
 * cache must be loaded anew.
 */
export async function refreshVectorCache(
  s: Session,
  cache: VectorCache,
  pgvector: boolean,
): Promise<boolean> {
  const from = cache.position;
  if (from === null) throw new Error('refresh before the first load');
  const p = new Params();
  const rows = await s.all(
    `WITH ${SNAPSHOT}
     SELECT ${positionColumns(s, p)}, c.* FROM (SELECT) one LEFT JOIN LATERAL (
       SELECT ${columns(pgvector)} FROM ${s.schema}.mnemo_records r
       WHERE ${unseenRecords(p, from)}
     ) c ON true`,
    p,
  );
  const to = toPosition(rows[0]);
  if (to.run !== from.run) return false;
  for (const row of rows) if (row.id !== null) cache.add(toCached(row, pgvector));
  cache.position = to;
  return true;
}

/**
 * `searchVector` over the candidates `ids` found on a cache at `from`, and
 * over the records written since (see `unseenRecords`): every one of them
 * that is visible, passes the filters and has a score, scored exactly as
 * `searchVector` scores (`roundedCosine`, the same doubles as
 * `mnemo_cosine`) and ranked the same way; the caller takes the top. With
 * the records written since, the answer is the full query's in this one
 * statement's snapshot, though the cache was brought to an earlier one.
 * PostgreSQL checks visibility and filters and returns the rows; scoring
 * them here saves `mnemo_cosine`'s 0.1–0.2 ms a record.
 */
export async function scoreVectorCandidates(
  s: Session,
  query: VectorQuery,
  ids: readonly string[],
  from: FeedPosition,
): Promise<ScoredRecord[]> {
  const p = new Params();
  const rows = await s.all(
    `WITH ${SNAPSHOT}
     SELECT ${recordColumns(s.schema)} FROM ${s.schema}.mnemo_records r
     WHERE (r.id = ANY(${p.texts(ids)}) AND NOT r.is_plan OR ${unseenRecords(p, from)})
       AND ${visiblePredicate(s.schema, p, query.visibility)} AND ${filterPredicate(p, query.filters)}`,
    p,
  );
  const scored: ScoredRecord[] = [];
  for (const row of rows) {
    const record = rowToRecord(row);
    const score = record.embedding === null ? null : roundedCosine(record.embedding, query.vector);
    if (score !== null) scored.push({ record, score });
  }
  // Ties by id in UTF-8 byte order (COLLATE "C"), which UTF-16 code unit order is not.
  scored.sort(
    (a, b) =>
      b.score - a.score || Buffer.compare(Buffer.from(a.record.id), Buffer.from(b.record.id)),
  );
  return scored;
}

/** The ids among `ids` of records that no longer exist or are deleted. */
export async function goneRecords(s: Session, ids: readonly string[]): Promise<string[]> {
  const p = new Params();
  const rows = await s.all(
    `SELECT c.id FROM unnest(${p.texts(ids)}) AS c(id)
     WHERE NOT EXISTS (SELECT 1 FROM ${s.schema}.mnemo_records r WHERE r.id = c.id AND r.deleted_at IS NULL)`,
    p,
  );
  return rows.map((row) => String(row.id));
}

function toCached(row: Row, pgvector: boolean): CachedRecord {
  return {
    id: String(row.id),
    agentId: String(row.agent_id),
    orgId: row.org_id === null ? null : String(row.org_id),
    scope: String(row.scope),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    embedding:
      row.embedding === null
        ? null
        : (pgvector ? unpackVector : unpackArray)(row.embedding as Buffer),
  };
}
