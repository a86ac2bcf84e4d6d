import { unpackArray, unpackVector } from './binary.js';
import type { Row, Session } from './session.js';
import { Params } from './sql.js';
import type { CachedRecord, FeedPosition, VectorCache } from './vector-cache.js';

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
const SNAPSHOT = `snap AS MATERIALIZED (SELECT pg_current_snapshot() AS s)`;
const POSITION = `(SELECT pg_snapshot_xmax(s)::text FROM snap) AS xmax,
  (SELECT array(SELECT pg_snapshot_xip(s)::text) FROM snap) AS xip`;

/**
 * The largest `xid8`. The refresh reads `written_xid BETWEEN xmax AND this`
 * rather than `>= xmax`: without statistics on the column (a table not yet
 * analyzed since version 7), PostgreSQL estimates a third of the table for
 * an open range and scans it all (115 ms at 100,000 records), but a small
 * share for a closed one, which the index serves (0.1 ms).
 */
const LAST_XID = `'18446744073709551615'::xid8`;

function toPosition(row: Row | undefined): FeedPosition {
  if (row === undefined) throw new Error('the snapshot query returned no row');
  return { from: String(row.xmax), pending: (row.xip as string[]) ?? [] };
}

/**
 * Loads every live, non-plan record into an empty cache, a page at a time.
 * The position is the first statement's snapshot: a record of a transaction
 * that it did not see is read again by the next refresh, and one that it saw
 * is read by a page, unless deleted since.
 */
export async function loadVectorCache(
  s: Session,
  cache: VectorCache,
  pgvector: boolean,
): Promise<void> {
  const [row] = await s.all(`WITH ${SNAPSHOT} SELECT ${POSITION}`);
  const position = toPosition(row);
  let after: string | null = null;
  for (;;) {
    const p = new Params();
    const rows = await s.all(
      `SELECT ${columns(pgvector)} FROM ${s.schema}.mnemo_records r
       WHERE NOT r.is_plan AND r.deleted_at IS NULL
         ${after === null ? '' : `AND r.id > ${p.add(after, '::text')}`}
       ORDER BY r.id LIMIT ${p.add(LOAD_PAGE, '::int')}`,
      p,
    );
    for (const record of rows) cache.add(toCached(record, pgvector));
    if (rows.length < LOAD_PAGE) break;
    after = String((rows[rows.length - 1] as Row).id);
  }
  cache.position = position;
}

/**
 * Adds the records written by the transactions that had not finished at the
 * cache's position (see VectorCache), and moves the position to this
 * statement's snapshot.
 */
export async function refreshVectorCache(
  s: Session,
  cache: VectorCache,
  pgvector: boolean,
): Promise<void> {
  const from = cache.position;
  if (from === null) throw new Error('refresh before the first load');
  const p = new Params();
  const rows = await s.all(
    `WITH ${SNAPSHOT}
     SELECT ${POSITION}, c.* FROM (SELECT) one LEFT JOIN LATERAL (
       SELECT ${columns(pgvector)} FROM ${s.schema}.mnemo_records r
       WHERE (r.written_xid BETWEEN ${p.add(from.from, '::xid8')} AND ${LAST_XID}
           OR r.written_xid = ANY(${p.add(from.pending, '::xid8[]')}))
         AND NOT r.is_plan AND r.deleted_at IS NULL
     ) c ON true`,
    p,
  );
  for (const row of rows) if (row.id !== null) cache.add(toCached(row, pgvector));
  cache.position = toPosition(rows[0]);
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
