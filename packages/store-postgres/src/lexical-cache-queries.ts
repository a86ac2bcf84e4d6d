import type { LexicalQuery, ScoredRecord } from '@mnemo/core';
import type { FeedPosition } from './cached-records.js';
import type { LexicalCache, LexicalRecord, LexicalStats } from './lexical-cache.js';
import { lexicalFullScores, lexicalWeights, postingVisibility, rowsOfTop } from './queries.js';
import { rowToRecord } from './rows.js';
import type { Row, Session } from './session.js';
import { Params } from './sql.js';
import {
  loadPages,
  positionColumns,
  SNAPSHOT,
  toPosition,
  unseenRecords,
} from './vector-cache-queries.js';

/**
 * What the cache keeps of each record `r` (`x`): taken from its postings,
 * which carry what a lexical search in SQL reads of visibility and filters
 * (mnemo writes them with the record and never changes them), so that the
 * cache decides as that search does. A record without postings has null
 * terms.
 */
const postingsOfRecord = (s: Session) => `LATERAL (
    SELECT min(po.agent_id) AS agent_id, min(po.org_key) AS org_key, min(po.scope) AS scope,
           min(po.memory_type) AS memory_type,
           CASE WHEN bool_or(po.expires_at IS NULL) THEN NULL ELSE max(po.expires_at) END AS expires_at,
           min(po.doc_length) AS doc_length,
           array_agg(po.term ORDER BY po.term) AS terms, array_agg(po.tf ORDER BY po.term) AS tfs
    FROM ${s.schema}.mnemo_postings po WHERE po.record_id = r.id
  ) x`;

function toLexical(row: Row): LexicalRecord | null {
  if (row.terms === null || row.terms === undefined) return null;
  const orgKey = String(row.org_key);
  return {
    id: String(row.id),
    agentId: String(row.agent_id),
    orgId: orgKey === '' ? null : orgKey,
    scope: String(row.scope),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    memoryType: String(row.memory_type),
    docLength: Number(row.doc_length),
    terms: row.terms as string[],
    tfs: (row.tfs as (number | string)[]).map(Number),
  };
}

function addRows(cache: LexicalCache, rows: readonly Row[]): void {
  for (const row of rows) {
    const record = toLexical(row);
    if (record !== null) cache.add(record);
  }
}

/** Loads the postings of every live, non-plan record into an empty cache (see `loadPages`). */
export function loadLexicalCache(
  s: Session,
  cache: LexicalCache,
  stopped: () => boolean,
): Promise<void> {
  return loadPages(
    s,
    cache,
    stopped,
    (where) => `SELECT r.id, x.* FROM (
         SELECT r.id FROM ${s.schema}.mnemo_records r ${where}
       ) r CROSS JOIN ${postingsOfRecord(s)}
       ORDER BY r.id`,
    (rows) => addRows(cache, rows),
  );
}

/**
 * Adds the records written by the transactions that had not finished at the
 * cache's position, and moves the position to this statement's snapshot
 * (see `refreshVectorCache`). False, changing nothing, when the position was
 * taken on another run of the transaction ids: the cache must be loaded anew.
 */
export async function refreshLexicalCache(s: Session, cache: LexicalCache): Promise<boolean> {
  const from = cache.position;
  if (from === null) throw new Error('refresh before the first load');
  const p = new Params();
  const rows = await s.all(
    `WITH ${SNAPSHOT}
     SELECT ${positionColumns(s, p)}, c.* FROM (SELECT) one LEFT JOIN LATERAL (
       SELECT r.id, x.* FROM ${s.schema}.mnemo_records r CROSS JOIN ${postingsOfRecord(s)}
       WHERE ${unseenRecords(p, from)}
     ) c ON true`,
    p,
  );
  const to = toPosition(rows[0]);
  if (to.run !== from.run) return false;
  addRows(
    cache,
    rows.filter((row) => row.id !== null),
  );
  cache.position = to;
  return true;
}

/** The caller's statistics (`stats` and `terms` of `lexicalWeights`): columns, then what they are read from. */
const STATS_COLUMNS =
  'st.n AS stat_n, st.avgdl AS stat_avgdl, tm.terms AS stat_terms, tm.dfs AS stat_dfs';
const STATS_FROM = `stats st CROSS JOIN (
     SELECT coalesce(array_agg(term ORDER BY term COLLATE "C"), '{}') AS terms,
            coalesce(array_agg(df ORDER BY term COLLATE "C"), '{}') AS dfs
     FROM terms
   ) tm`;

function toStats(row: Row | undefined): LexicalStats {
  if (row === undefined) throw new Error('the statistics query returned no row');
  return {
    n: Number(row.stat_n),
    avgdl: Number(row.stat_avgdl),
    terms: (row.stat_terms as string[]).map(String),
    dfs: (row.stat_dfs as (number | string)[]).map(Number),
  };
}

/** Whether two searches' statistics are the same (so are then every record's scores). */
export function sameStats(a: LexicalStats, b: LexicalStats): boolean {
  return (
    a.n === b.n &&
    a.avgdl === b.avgdl &&
    a.terms.length === b.terms.length &&
    a.terms.every((term, i) => term === b.terms[i] && a.dfs[i] === b.dfs[i])
  );
}

/**
 * BM25's statistics for the caller and the query's filters, as a lexical
 * search in SQL computes them (`lexicalPruned`'s `stats` and `terms`).
 */
export async function lexicalStats(s: Session, query: LexicalQuery): Promise<LexicalStats> {
  const p = new Params();
  const v = postingVisibility(s, p, query);
  const [row] = await s.all(
    `WITH ${v.ctes()},
     ${lexicalWeights(s, p, v, p.texts(query.terms))}
     SELECT ${STATS_COLUMNS} FROM ${STATS_FROM}`,
    p,
  );
  return toStats(row);
}

/**
 * The top `query.limit` of the candidates `ids` found on a cache at `from`,
 * and of the records written since (see `unseenRecords`): those visible and
 * passing the filters, with their postings of the query's terms, scored as
 * `lexicalPruned` scores (`lexicalFullScores`) and ranked the same way, with
 * the statistics the scores were computed with: the records written since
 * are all there, so in this one statement's snapshot the answer is the full
 * query's when the cache's candidates settle it (see `LexicalCache`) with
 * these statistics.
 */
export async function scoreLexicalCandidates(
  s: Session,
  query: LexicalQuery,
  ids: readonly string[],
  from: FeedPosition,
): Promise<{ stats: LexicalStats; ranked: ScoredRecord[] }> {
  const p = new Params();
  const v = postingVisibility(s, p, query);
  const terms = p.texts(query.terms);
  const rows = await s.all(
    `WITH ${SNAPSHOT}, ${v.ctes()},
     ${lexicalWeights(s, p, v, terms)},
     -- The candidates, and the records written since the cache's snapshot, as one array.
     candidates AS MATERIALIZED (
       SELECT ${p.texts(ids)} || coalesce(array_agg(r.id), '{}') AS ids
       FROM ${s.schema}.mnemo_records r WHERE ${unseenRecords(p, from)}
     ),
     top AS MATERIALIZED (
       ${lexicalFullScores(s, p, terms, '(SELECT ids FROM candidates)::text[]', `${v.live('po')} AND ${v.visible('po')}`, 'array')}
       ORDER BY score DESC, id COLLATE "C" ASC
       LIMIT ${p.add(query.limit, '::int')}
     )
     SELECT ${STATS_COLUMNS}, t.* FROM ${STATS_FROM}
     LEFT JOIN (${rowsOfTop(s)}) t ON true
     ORDER BY t.score DESC, t.id COLLATE "C" ASC`,
    p,
  );
  return {
    stats: toStats(rows[0]),
    ranked: rows
      .filter((row) => row.id !== null)
      .map((row) => ({ record: rowToRecord(row), score: Number(row.score) })),
  };
}
