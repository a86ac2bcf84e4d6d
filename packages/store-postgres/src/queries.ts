import {
  type AuditEvent,
  type AuditHead,
  type AuditPage,
  BM25_B,
  BM25_K1,
  embeddingProblem,
  type Grant,
  type LexicalQuery,
  type ListQuery,
  type MemoryRecord,
  type NewRecord,
  permissionFromLevel,
  permissionLevel,
  type ScoredRecord,
  singlePrecisionCosineError,
  type VectorQuery,
  type Visibility,
  type VisibleRecord,
} from '@mnemo/core';
import { forgetAccesses } from './access-log.js';
import { packVectors } from './binary.js';
import { countPlanTokens, forgetPlanStats, forgetPlans } from './plan-queries.js';
import { rowToAuditEvent, rowToGrant, rowToRecord } from './rows.js';
import { rounded, roundedBm25, SCORE_MARGIN } from './scores.js';
import type { Row, Session } from './session.js';
import {
  filterPredicate,
  Params,
  permissionLevelExpression,
  recordColumns,
  sameOrg,
  visiblePredicate,
  visibleRecords,
} from './sql.js';

// Every SQL statement of the store, as functions of a session, so the same
// reads run on the pool (outside a transaction) and on a client (inside one).

function toVisible(row: Row): VisibleRecord {
  return {
    record: rowToRecord(row),
    permission: permissionFromLevel(Number(row.permission_level)) ?? 'read',
  };
}

function toScored(row: Row): ScoredRecord {
  return { record: rowToRecord(row), score: Number(row.score) };
}

export async function getRecords(
  s: Session,
  visibility: Visibility,
  ids: readonly string[],
): Promise<VisibleRecord[]> {
  if (ids.length === 0) return [];
  const p = new Params();
  const rows = await s.all(
    `SELECT ${recordColumns(s.schema)}, ${permissionLevelExpression(s.schema, p, visibility)} AS permission_level
     FROM ${s.schema}.mnemo_records r
     WHERE r.id = ANY(${p.texts(ids)}) AND ${visiblePredicate(s.schema, p, visibility)}`,
    p,
  );
  return rows.map(toVisible);
}

export async function listRecords(s: Session, query: ListQuery): Promise<VisibleRecord[]> {
  const p = new Params();
  const rows = await s.all(
    `SELECT ${recordColumns(s.schema)}, ${permissionLevelExpression(s.schema, p, query.visibility)} AS permission_level
     FROM ${s.schema}.mnemo_records r
     WHERE ${visiblePredicate(s.schema, p, query.visibility)} AND ${filterPredicate(p, query.filters)}
       ${query.includePlans === true ? '' : 'AND NOT r.is_plan'}
       ${query.afterId === undefined ? '' : `AND r.id COLLATE "C" > ${p.add(query.afterId, '::text')}`}
     ORDER BY r.id COLLATE "C"
     ${query.limit === undefined ? '' : `LIMIT ${p.add(query.limit, '::int')}`}`,
    p,
  );
  return rows.map(toVisible);
}

/** The filters a posting, a statistics row and a tag row carry (each has its record's memory type and scope). */
export const POSTING_FILTERS: ReadonlySet<string> = new Set(['memoryTypes', 'scopes']);
const TAG_FILTERS: ReadonlySet<string> = new Set(['tagsAny', 'tagsAll']);

export const onlyFilters = (query: LexicalQuery, names: (name: string) => boolean) =>
  Object.entries(query.filters).every(([name, value]) => value === undefined || names(name));

/**
 * BM25 (see the port). Without filters, or with memory type and scope
 * filters only, from the postings and the statistics tables alone: first
 * pruned (`lexicalPruned`), else in full (`lexicalFromPostings`); with tag
 * filters too, over the records that carry the tags (`lexicalFromTags`);
 * with any other filter, over the records.
 */
export async function searchLexical(s: Session, query: LexicalQuery): Promise<ScoredRecord[]> {
  if (onlyFilters(query, (name) => POSTING_FILTERS.has(name))) {
    return (await lexicalPruned(s, query)) ?? lexicalFromPostings(s, query);
  }
  if (onlyFilters(query, (name) => POSTING_FILTERS.has(name) || TAG_FILTERS.has(name))) {
    return lexicalFromTags(s, query);
  }
  return lexicalOverRecords(s, query);
}

/**
 * Postings of its candidates' records a pruned lexical search probes, at most, per posting of
 * the query's terms, before it reads the latter instead (see `lexicalPruned`). At 100k records,
 * 0.25 to 1 timed alike; at 2, p90 was 25.1–25.5 ms against 21.7–24.6.
 */
const PROBE_POSTINGS_PER_TERM_POSTING = 0.5;

/** BM25's term score of a posting (`tf`, `dl`) in a term of inverse document frequency `idf`, with `stats` as `st`. */
function termScore(p: Params, idf: string, tf: string, dl: string): string {
  const k1 = p.add(BM25_K1, '::float8');
  const b = p.add(BM25_B, '::float8');
  return `${idf} * ${tf} * (${k1} + 1) / (${tf} + ${k1} * (1 - ${b} + ${b} * ${dl} / st.avgdl))`;
}

const inverseDocumentFrequency = (df: string) => `ln(1 + (st.n - ${df} + 0.5) / (${df} + 0.5))`;

/** BM25 scores of the hits of `hits` (a CTE of record_id, term, tf, dl) with `stats` (n, avgdl), top `limit` rows. */
function scoreAndFetch(s: Session, p: Params, limit: number): string {
  return `df AS MATERIALIZED (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term),
     scored AS (
       SELECT h.record_id,
              ${roundedBm25(`sum(${termScore(p, inverseDocumentFrequency('d.df'), 'h.tf', 'h.dl')})`)} AS score
       FROM hits h JOIN df d ON d.term = h.term CROSS JOIN stats st
       GROUP BY h.record_id
     ),
     -- The top ids first, so only they fetch their rows (content, metadata, embedding).
     top AS MATERIALIZED (
       SELECT record_id AS id, score FROM scored ORDER BY score DESC, record_id COLLATE "C" ASC
       LIMIT ${p.add(limit, '::int')}
     )
     ${rowsOfTop(s)}`;
}

/**
 * What a search over the postings alone needs of the caller's visibility and
 * the query's memory type and scope filters: the CTE `granted` (the ids of
 * the records shared with the caller by a live grant); `ctes()`, `granted`
 * followed by `stats` (n, avgdl: the visible, non-plan records' count and
 * mean length among those that pass the filters, from `mnemo_lexical_stats`
 * plus the visible records that have an expiry or are shared with the
 * caller, both usually few); and the visibility rule and filters as a
 * predicate on a posting or tag row (which carries its record's owner,
 * scope, memory type and expiry).
 */
export function postingVisibility(s: Session, p: Params, query: LexicalQuery) {
  const { visibility: v, filters } = query;
  const agent = p.add(v.agentId, '::text');
  const orgKey = p.add(v.orgId ?? '', '::text');
  const now = p.time(v.now);
  const owns = (r: string) =>
    `(${r}.agent_id = ${agent} AND ${sameOrg(p, `${r}.org_id`, v.orgId)})`;
  const types = filters.memoryTypes && p.texts(filters.memoryTypes);
  const scopes = filters.scopes && p.texts(filters.scopes);
  /** The filters, on a row with memory_type and scope. */
  const passes = (t: string) =>
    `${types === undefined ? '' : `${t}.memory_type = ANY(${types}) AND `}${
      scopes === undefined ? '' : `${t}.scope = ANY(${scopes}) AND `
    }TRUE`;
  /** Owned, global or public in the caller's org, passing the filters: what the statistics tables count by key. */
  const countedByKey = (t: string) =>
    `(((${t}.agent_id = ${agent} AND ${t}.org_key = ${orgKey}) OR ${t}.scope = 'global'
      OR (${t}.scope = 'public' AND ${t}.org_key = ${orgKey})) AND ${passes(t)})`;
  const granted = `granted AS MATERIALIZED (
       SELECT g.record_id FROM ${s.schema}.mnemo_grants g
       WHERE g.grantee_agent_id = ${agent} AND ${sameOrg(p, 'g.grantee_org_id', v.orgId)}
         AND (g.expires_at IS NULL OR g.expires_at > ${now})
     )`;
  // A function, so that its parameters exist only in a statement that uses it (PostgreSQL
  // cannot type a parameter no statement text names).
  const ctes = () => `${granted},
     counted AS (
       SELECT st.records AS n, st.total_length AS len FROM ${s.schema}.mnemo_lexical_stats st
       WHERE ${countedByKey('st')}
       UNION ALL
       SELECT 1, r.doc_length FROM ${s.schema}.mnemo_records r
       WHERE r.expires_at IS NOT NULL AND r.deleted_at IS NULL AND NOT r.is_plan AND r.expires_at > ${now}
         AND (${owns('r')} OR r.scope = 'global' OR (r.scope = 'public' AND ${sameOrg(p, 'r.org_id', v.orgId)}))
         AND ${passes('r')}
       UNION ALL
       SELECT 1, r.doc_length FROM ${s.schema}.mnemo_records r
       WHERE r.id IN (SELECT record_id FROM granted) AND r.scope = 'shared' AND NOT ${owns('r')}
         AND r.deleted_at IS NULL AND NOT r.is_plan AND (r.expires_at IS NULL OR r.expires_at > ${now})
         AND ${passes('r')}
     ),
     stats AS MATERIALIZED (
       SELECT coalesce(sum(n), 0)::float8 AS n,
              CASE WHEN coalesce(sum(n), 0) = 0 THEN 0 ELSE (sum(len)::numeric / sum(n))::float8 END AS avgdl
       FROM counted
     )`;
  const live = (po: string) => `(${po}.expires_at IS NULL OR ${po}.expires_at > ${now})`;
  const visible = (po: string) =>
    `(${countedByKey(po)} OR (${po}.scope = 'shared' AND ${po}.record_id IN (SELECT record_id FROM granted)
      AND ${passes(po)}))`;
  return { granted, ctes, now, agent, orgKey, passes, countedByKey, live, visible };
}

/**
 * BM25 without filters, or with memory type and scope filters only,
 * touching only the query's postings: the visibility rule and the filters
 * are applied to the postings themselves, and N and avgdl come from the
 * statistics (see `postingVisibility`). Same scores as `lexicalOverRecords`.
 */
async function lexicalFromPostings(s: Session, query: LexicalQuery): Promise<ScoredRecord[]> {
  const p = new Params();
  const v = postingVisibility(s, p, query);
  const rows = await s.all(
    `WITH ${v.ctes()},
     -- Read twice from the covering index (document frequencies, then scores) rather than
     -- materialized: writing ~35,000 matches to a tuplestore and reading it back twice cost
     -- more than the second index-only scan, and inlined, the term order of the index feeds
     -- both the frequencies and a merge join with them.
     hits AS NOT MATERIALIZED (
       SELECT po.record_id, po.term, po.tf::float8 AS tf, po.doc_length::float8 AS dl
       FROM ${s.schema}.mnemo_postings po
       WHERE po.term = ANY(${p.texts(query.terms)}) AND ${v.live('po')} AND ${v.visible('po')}
     ),
     ${scoreAndFetch(s, p, query.limit)}`,
    p,
  );
  return rows.map(toScored);
}

/**
 * The CTEs, after `postingVisibility`'s, giving the query's terms (`terms`, a text[] parameter)
 * their weights for the caller: `uncounted` (the visible postings `mnemo_term_stats` does not
 * count), `terms` (term, df, and the largest tf and least length, of the terms some visible
 * record holds) and `weights` (with idf, the term's bound, and whether it is essential: see
 * `lexicalPruned`).
 */
export function lexicalWeights(
  s: Session,
  p: Params,
  v: ReturnType<typeof postingVisibility>,
  terms: string,
): string {
  const score = (idf: string, tf: string, dl: string) => termScore(p, idf, tf, dl);
  return `-- Visible postings of the query's terms that mnemo_term_stats does not count: with an
     -- expiry, or shared with the caller (as in \`counted\`).
     uncounted AS MATERIALIZED (
       SELECT po.term, po.tf, po.doc_length FROM ${s.schema}.mnemo_postings po
       WHERE po.term = ANY(${terms}) AND po.expires_at IS NOT NULL AND po.expires_at > ${v.now}
         AND ${v.countedByKey('po')}
       UNION ALL
       SELECT po.term, po.tf, po.doc_length FROM ${s.schema}.mnemo_postings po
       WHERE po.record_id IN (SELECT record_id FROM granted) AND po.term = ANY(${terms})
         AND po.scope = 'shared' AND NOT (po.agent_id = ${v.agent} AND po.org_key = ${v.orgKey})
         AND ${v.live('po')} AND ${v.passes('po')}
     ),
     terms AS MATERIALIZED (
       SELECT t.term, sum(t.df)::float8 AS df, max(t.tf)::float8 AS tf, min(t.dl)::float8 AS dl FROM (
         SELECT ts.term, ts.df, ts.max_tf AS tf, ts.min_length AS dl FROM ${s.schema}.mnemo_term_stats ts
         WHERE ts.term = ANY(${terms}) AND ${v.countedByKey('ts')}
         UNION ALL
         SELECT term, 1, tf, doc_length FROM uncounted
       ) t GROUP BY t.term HAVING sum(t.df) > 0
     ),
     weights AS MATERIALIZED (
       SELECT t.term, t.df, t.tf, ${inverseDocumentFrequency('t.df')} AS idf,
              ${score(inverseDocumentFrequency('t.df'), 't.tf', 't.dl')} AS bound,
              (t.df <= st.n / 20 OR t.df = min(t.df) OVER ()) AS essential
       FROM terms t CROSS JOIN stats st
     )`;
}

/**
 * The rounded full scores (id, score) of the records of `ids`, from their postings of the
 * query's terms (`terms`) that pass `condition`, with `weights` and `stats` (see
 * `lexicalWeights`), summed in term order. Their postings are found through the record id
 * index: `ids` a CTE of record_id joined (`join`), or a text[] expression (`array`: a join
 * with ids the planner overestimates, such as the lexical cache's candidates, was planned as
 * a pass over every posting of the query's terms); or, for many records, by one pass over the
 * query terms' postings, each kept when its record id is a key of a jsonb object of the ids
 * of the CTE `ids` (`pass`). A join would be planned on the CTEs' estimates of a row or two:
 * as a nested loop that reads the term index once per record.
 */
export function lexicalFullScores(
  s: Session,
  p: Params,
  terms: string,
  ids: string,
  condition: string,
  read: 'join' | 'array' | 'pass' = 'join',
): string {
  const weighed = 'JOIN weights w ON w.term = po.term CROSS JOIN stats st';
  const which = {
    join: `FROM ${ids} c JOIN ${s.schema}.mnemo_postings po ON po.record_id = c.record_id ${weighed} WHERE`,
    array: `FROM (
         SELECT * FROM ${s.schema}.mnemo_postings po WHERE po.record_id = ANY(${ids}) OFFSET 0
       ) po ${weighed} WHERE`,
    pass: `FROM ${s.schema}.mnemo_postings po ${weighed} WHERE (SELECT jsonb_object_agg(record_id, true) FROM ${ids}) ? po.record_id AND`,
  }[read];
  return `SELECT id COLLATE "default" AS id, score FROM (
       SELECT po.record_id COLLATE "C" AS id,
              ${roundedBm25(`sum(${termScore(p, 'w.idf', 'po.tf::float8', 'po.doc_length::float8')} ORDER BY po.term)`)} AS score
       ${which} ${condition} AND po.term = ANY(${terms})
       GROUP BY 1
     ) grouped`;
}

/**
 * BM25 without filters, or with memory type and scope filters only, by
 * pruning (MaxScore): `lexicalFromPostings`' result, or null when pruning
 * cannot settle it (then that query runs).
 *
 * The common terms of a query (in more than one visible record in 20) hold
 * most of its postings and add little to a score. Their document
 * frequencies, and a bound of their term score, come from `mnemo_term_stats`
 * instead of their postings. Only the other (essential) terms' postings are
 * read, giving their records partial scores. The records of the limit best
 * partial scores, scored in full, give a floor (the limit-th of those), and
 * a record whose partial score plus its common terms' bounds (at its own
 * length) cannot reach that floor is dropped. The rest, usually about 100,
 * are scored in full from their own postings, summed in term order (as the
 * full query's plan over the term index adds them; either way, scores are
 * rounded to 10 decimals before they are compared). The result stands
 * when the limit-th of them scores above the sum of the common terms'
 * bounds, which is all a record matching only common terms can reach.
 * Otherwise the full query runs. The records left are scored from their own
 * postings, probed through the record id index, when those are few against
 * the postings of the query's terms; else from one pass over the latter
 * (which the full query would read too), kept for those records by hash.
 */
async function lexicalPruned(s: Session, query: LexicalQuery): Promise<ScoredRecord[] | null> {
  const p = new Params();
  const v = postingVisibility(s, p, query);
  const terms = p.texts(query.terms);
  const limit = p.add(query.limit, '::int');
  const score = (idf: string, tf: string, dl: string) => termScore(p, idf, tf, dl);
  const margin = String(SCORE_MARGIN);
  const fullScores = (ids: string, condition: string, probe = true) =>
    lexicalFullScores(s, p, terms, ids, condition, probe ? 'join' : 'pass');
  const rows = await s.all(
    `WITH ${v.ctes()},
     ${lexicalWeights(s, p, v, terms)},
     common AS MATERIALIZED (
       SELECT coalesce(sum(bound) FILTER (WHERE NOT essential), 0) AS bound,
              coalesce(array_agg(term) FILTER (WHERE essential), '{}') AS essential
       FROM weights
     ),
     -- Grouped on the ids' bytes: planned as a sort (its estimate is a few rows), the ids in the
     -- database's collation took 2.6 of the 4.9 ms of this step for 2,900 postings. Back in
     -- that collation, they join the record id index.
     partial AS MATERIALIZED (
       SELECT record_id COLLATE "default" AS record_id, dl, score FROM (
         SELECT po.record_id COLLATE "C" AS record_id, min(po.doc_length)::float8 AS dl,
                sum(${score('w.idf', 'po.tf::float8', 'po.doc_length::float8')}) AS score
         FROM ${s.schema}.mnemo_postings po JOIN weights w ON w.term = po.term CROSS JOIN stats st
         WHERE po.term = ANY((SELECT essential FROM common)::text[]) AND ${v.live('po')} AND ${v.visible('po')}
         GROUP BY 1
       ) grouped
     ),
     -- The limit best partial scores' records, scored in full: the limit-th of those full
     -- scores is a floor for the result (far above the limit-th partial score when the
     -- common terms weigh in).
     seeds AS MATERIALIZED (SELECT record_id FROM partial ORDER BY score DESC LIMIT ${limit}),
     seeded AS MATERIALIZED (${fullScores('seeds', 'true')}),
     floor AS MATERIALIZED (
       SELECT CASE WHEN (SELECT count(*) FROM seeded) = ${limit} THEN (SELECT min(score) FROM seeded) ELSE 0 END AS score
     ),
     -- The common terms' bounds at each length of the partial records, computed once per
     -- length rather than once per record: a record's bound at its own length, by subscript.
     -- A term's score falls as the length grows, so past 4,096 lengths a record takes the
     -- bound of the last one, which is higher than its own.
     lengths AS MATERIALIZED (
       SELECT min(dl)::int AS low, least(max(dl), min(dl) + 4095)::int AS high FROM partial
     ),
     length_bounds AS MATERIALIZED (
       SELECT coalesce(array_agg(b.bound ORDER BY b.dl), '{}') AS bounds FROM (
         SELECT l.dl, coalesce(sum(${score('w.idf', 'w.tf', 'l.dl::float8')}) FILTER (WHERE NOT w.essential), 0) AS bound
         FROM generate_series((SELECT low FROM lengths), (SELECT high FROM lengths)) l(dl)
           CROSS JOIN weights w CROSS JOIN stats st
         GROUP BY l.dl
       ) b
     ),
     candidates AS MATERIALIZED (
       SELECT pa.record_id, pa.dl FROM partial pa CROSS JOIN floor f
       WHERE pa.score + (SELECT bound FROM common) >= f.score - ${margin}
         AND pa.score + coalesce((SELECT bounds FROM length_bounds)[least(pa.dl::int, (SELECT high FROM lengths)) - (SELECT low FROM lengths) + 1], 'Infinity')
             >= f.score - ${margin}
     ),
     -- Whether probing the candidates' own postings (at most their lengths, read at random)
     -- costs less than one pass over every posting of the query's terms.
     few AS MATERIALIZED (
       SELECT coalesce(sum(dl), 0) <= ${PROBE_POSTINGS_PER_TERM_POSTING} * (SELECT sum(df) FROM weights) AS yes
       FROM candidates
     ),
     top AS MATERIALIZED (
       SELECT id, score FROM (
         ${fullScores('candidates', '(SELECT yes FROM few)')}
         UNION ALL
         ${fullScores('candidates', 'NOT (SELECT yes FROM few)', false)}
       ) scored
       ORDER BY score DESC, id COLLATE "C" ASC
       LIMIT ${limit}
     ),
     settled AS MATERIALIZED (
       SELECT ((SELECT bound FROM common) = 0
         OR ((SELECT count(*) FROM top) = ${limit}
             AND (SELECT min(score) FROM top) > (SELECT bound FROM common) + ${margin})) AS yes
     )
     SELECT settled.yes AS settled, t.* FROM settled
     LEFT JOIN (${rowsOfTop(s)}) t ON settled.yes
     ORDER BY t.score DESC, t.id COLLATE "C" ASC`,
    p,
  );
  if (rows[0]?.settled !== true) return null;
  return rows.filter((row) => row.id !== null).map(toScored);
}

/**
 * The key of a tag's rows in `mnemo_record_tags` (see migration 11): the
 * SHA-256 of the tag's UTF-8 bytes, as the rows are written and searched.
 */
const tagKey = (tag: string) => `sha256(convert_to(${tag}, 'UTF8'))`;

/**
 * BM25 with tag filters (and memory type and scope filters, if any): the
 * visible records that pass, with their lengths, from `mnemo_record_tags`
 * (one row per tag of a live record, with what visibility needs of it),
 * give the statistics, and the query's postings of those records the
 * matches. Same scores as `lexicalOverRecords`.
 */
async function lexicalFromTags(s: Session, query: LexicalQuery): Promise<ScoredRecord[]> {
  const p = new Params();
  const v = postingVisibility(s, p, query);
  const anyOf = [...new Set(query.filters.tagsAny ?? [])];
  const allOf = [...new Set(query.filters.tagsAll ?? [])];
  const tags = [...new Set([...anyOf, ...allOf])];
  const one = tags.length === 1;
  const rows = await s.all(
    `WITH ${v.granted},
     wanted AS MATERIALIZED (
       SELECT ${tagKey('t.tag')} AS key, t.tag = ANY(${p.texts(anyOf)}) AS any_of,
              t.tag = ANY(${p.texts(allOf)}) AS all_of
       FROM unnest(${p.texts(tags)}) AS t(tag)
     ),
     -- One row per record that passes: a record has a row per tag, so with one tag wanted
     -- these are the rows, and with several they are grouped.
     tagged AS MATERIALIZED (
       SELECT tg.record_id COLLATE "C" AS record_id, ${one ? 'tg.doc_length' : 'min(tg.doc_length)'} AS dl
       FROM wanted w JOIN ${s.schema}.mnemo_record_tags tg ON tg.tag_key = w.key
       WHERE ${v.live('tg')} AND ${v.visible('tg')}
       ${
         one
           ? ''
           : `GROUP BY 1
              HAVING ${anyOf.length === 0 ? 'TRUE' : 'bool_or(w.any_of)'}
                AND count(*) FILTER (WHERE w.all_of) = ${p.add(allOf.length, '::int')}`
       }
     ),
     stats AS MATERIALIZED (
       SELECT count(*)::float8 AS n, coalesce(avg(dl), 0)::float8 AS avgdl FROM tagged
     ),
     -- The query's postings, read from the term index, joined with the records that pass (one
     -- row each, so no semi-join's de-duplication) by hash. Written as a filter of the postings
     -- on the records, the join was planned on a CTE's default estimate and probed the
     -- postings' record index once per record that passes (10,000 probes, 167 ms); the ids
     -- compare byte-wise ("C"), which that index cannot serve. With the postings in a CTE of
     -- their own, the join had no estimate of them and was planned as a merge join that
     -- sorted them all (60,000 postings at 100k records: 31 ms p50 a tagged question, against
     -- 18 by hash).
     hits AS (
       SELECT po.record_id, po.term, po.tf::float8 AS tf, po.doc_length::float8 AS dl
       FROM ${s.schema}.mnemo_postings po JOIN tagged t ON t.record_id = po.record_id COLLATE "C"
       WHERE po.term = ANY(${p.texts(query.terms)})
     ),
     ${scoreAndFetch(s, p, query.limit)}`,
    p,
  );
  return rows.map(toScored);
}

/** BM25 over the visible, filtered records (the general path). */
async function lexicalOverRecords(s: Session, query: LexicalQuery): Promise<ScoredRecord[]> {
  const p = new Params();
  const rows = await s.all(
    // The visible set is written out twice rather than shared through one CTE, so the postings
    // join can use the records' primary key (joining a materialized list of 100k visible ids
    // sorted them all); `stats` and `df` are MATERIALIZED because, inlined, PostgreSQL
    // recomputed the collection statistics once per matching posting (seconds at 5k rows).
    `WITH stats AS MATERIALIZED (
       SELECT count(*)::float8 AS n, coalesce(avg(v.doc_length), 0)::float8 AS avgdl
       FROM (${visibleRecords(s.schema, p, query.visibility, query.filters, 'r.doc_length')}) v
     ),
     hits AS (
       SELECT po.record_id, po.term, po.tf::float8 AS tf, r.doc_length::float8 AS dl
       FROM ${s.schema}.mnemo_postings po JOIN ${s.schema}.mnemo_records r ON r.id = po.record_id
       WHERE po.term = ANY(${p.texts(query.terms)})
         AND NOT r.is_plan AND ${visiblePredicate(s.schema, p, query.visibility)} AND ${filterPredicate(p, query.filters)}
     ),
     ${scoreAndFetch(s, p, query.limit)}`,
    p,
  );
  return rows.map(toScored);
}

/** The size every embedding of this store has, fixed by the first one stored (or by the schema). */
export async function embeddingDimensions(s: Session): Promise<number | null> {
  const [row] = await s.all(
    `SELECT value FROM ${s.schema}.mnemo_settings WHERE key = 'embedding_dimensions'`,
  );
  return row === undefined ? null : Number(row.value);
}

/** Fixes the embedding size unless one is fixed (by any process); returns the size in force. */
export async function fixEmbeddingDimensions(s: Session, size: number): Promise<number> {
  const p = new Params();
  await s.exec(
    `INSERT INTO ${s.schema}.mnemo_settings VALUES ('embedding_dimensions', ${p.add(String(size), '::text')})
     ON CONFLICT (key) DO NOTHING`,
    p,
  );
  return (await embeddingDimensions(s)) ?? size;
}

export async function searchVector(
  s: Session,
  query: VectorQuery,
  pgvector: boolean,
): Promise<ScoredRecord[]> {
  return pgvector ? searchPgvector(s, query) : searchRealArrays(s, query);
}

/** The visible, filtered records' `id, <expression> AS score` rows, each branch cut to its top `limit`. */
function topOfVisible(
  s: Session,
  p: Params,
  query: VectorQuery,
  score: string,
  limit: string,
): string {
  // The visible records are `visibleRecords`' two branches, so the big one (owned, global and
  // public records) is a parallel scan: a grant test inside one predicate is a correlated
  // subplan, which kept PostgreSQL from scanning in parallel. Each branch takes its own top
  // first, in its parallel workers, which then pass on a few rows each instead of every
  // visible record's score. A NULL score (no embedding, or a zero vector) sorts last, so the
  // top holds every real score there is before any NULL.
  const topOfBranch = `ORDER BY score DESC NULLS LAST, r.id COLLATE "C" ASC LIMIT ${limit}`;
  return `SELECT id, score FROM (${visibleRecords(s.schema, p, query.visibility, query.filters, `r.id, ${score} AS score`, topOfBranch)}) visible
     ORDER BY score DESC NULLS LAST, id COLLATE "C" ASC
     LIMIT ${limit}`;
}

/** The rows of the ids of `top` (a CTE of id, score), best first. */
export function rowsOfTop(s: Session): string {
  return `SELECT ${recordColumns(s.schema)}, top.score
     FROM top JOIN ${s.schema}.mnemo_records r ON r.id = top.id
     ORDER BY top.score DESC, r.id COLLATE "C" ASC`;
}

/**
 * The exact cosine of `r.embedding` and `vector` in double precision, rounded
 * (every store's score); NULL for a missing or zero vector.
 */
function exactScore(s: Session, p: Params, vector: Float32Array, pgvector: boolean): string {
  const similarity = `${s.schema}.mnemo_cosine(r.embedding${pgvector ? '::real[]' : ''}, ${p.add(Array.from(vector), '::real[]')})`;
  return `nullif(${rounded(similarity)}, 'NaN'::float8)`;
}

/** Exact cosine over `real[]` embeddings, for every visible record. */
async function searchRealArrays(s: Session, query: VectorQuery): Promise<ScoredRecord[]> {
  const p = new Params();
  // A NaN similarity (a zero vector) is NULL like a missing one; NULLs are dropped only after
  // the limit: a test on the score before it made PostgreSQL compute the similarity again.
  const score = exactScore(s, p, query.vector, false);
  const rows = await s.all(
    `WITH top AS MATERIALIZED (
       SELECT id, score FROM (${topOfVisible(s, p, query, score, p.add(query.limit, '::int'))}) ranked
       WHERE score IS NOT NULL
     )
     ${rowsOfTop(s)}`,
    p,
  );
  return rows.map(toScored);
}

/**
 * Candidates beyond the limit that the first pass of a pgvector search keeps.
 * Records whose similarity is within the error bound of the k-th best are all
 * rescored; at 100k LoCoMo turns (each written about 36 times) with the hash
 * embedder, that was 10 to 120 records (38 at the median) for k = 10.
 */
const PGVECTOR_EXTRA_CANDIDATES = 128;

/**
 * Cosine with pgvector, exact. pgvector sums in single precision, so its
 * similarity can be off by `singlePrecisionCosineError` (5e-5 at 384
 * dimensions): near-ties ranked differently from the other stores, and scores
 * differed from the 8th decimal. So its similarity only picks candidates: the
 * top `limit + PGVECTOR_EXTRA_CANDIDATES` by it, of which those within twice
 * the bound of the k-th best (every record that can be in the exact top k) are
 * rescored in double precision (`mnemo_cosine`). If even the last candidate
 * is within that margin, records past the first pass could be too: a second
 * pass then rescores every visible record above the margin.
 */
async function searchPgvector(s: Session, query: VectorQuery): Promise<ScoredRecord[]> {
  // A query vector outside the embedding bounds (only a direct store call can pass one) has no
  // error bound: every visible record is rescored.
  const margin =
    embeddingProblem(query.vector) === null
      ? 2 * singlePrecisionCosineError(query.vector.length) + 1e-9
      : Number.POSITIVE_INFINITY;
  const p = new Params();
  const { approximate, rescored } = pgvectorScores(s, p, query);
  const limit = p.add(query.limit, '::int');
  const candidates = p.add(query.limit + PGVECTOR_EXTRA_CANDIDATES, '::int');
  const rows = await s.all(
    `WITH candidates AS MATERIALIZED (
       SELECT id, score FROM (${topOfVisible(s, p, query, approximate, candidates)}) ranked
       WHERE score IS NOT NULL
     ),
     bound AS MATERIALIZED (
       SELECT coalesce(
         (SELECT score FROM candidates ORDER BY score DESC LIMIT 1 OFFSET ${limit} - 1) - ${p.add(margin, '::float8')},
         '-Infinity'::float8) AS threshold
     ),
     ${rescored}
     SELECT ${recordColumns(s.schema)}, top.score, (SELECT threshold FROM bound) AS threshold,
       (SELECT count(*) = ${candidates} AND min(score) >= (SELECT threshold FROM bound) FROM candidates) AS partial
     FROM top JOIN ${s.schema}.mnemo_records r ON r.id = top.id
     ORDER BY top.score DESC, r.id COLLATE "C" ASC`,
    p,
  );
  if (rows[0]?.partial !== true) return rows.map(toScored);
  // The last candidate is within the margin: so may records past it be. Every visible record
  // above the threshold is rescored.
  const q = new Params();
  const again = pgvectorScores(s, q, query);
  const all = await s.all(
    `WITH bound AS (SELECT ${q.add(Number(rows[0].threshold), '::float8')} AS threshold),
     candidates AS MATERIALIZED (
       SELECT id, score FROM (${visibleRecords(s.schema, q, query.visibility, query.filters, `r.id, ${again.approximate} AS score`)}) visible
       WHERE score >= (SELECT threshold FROM bound)
     ),
     ${again.rescored}
     ${rowsOfTop(s)}`,
    q,
  );
  return all.map(toScored);
}

/**
 * pgvector's similarity to the query (`approximate`, NULL for a zero vector),
 * and the CTEs `scored` and `top`: the exact similarity of the `candidates`
 * (a CTE of id, score) at or above `bound`'s threshold, and the best `limit`.
 */
function pgvectorScores(
  s: Session,
  p: Params,
  query: VectorQuery,
): { approximate: string; rescored: string } {
  const vector = Array.from(query.vector);
  const approximate = `nullif(1 - (r.embedding <=> ${p.add(`[${vector.join(',')}]`, '::vector')}), 'NaN'::float8)`;
  const rescored = `scored AS (
       SELECT r.id, ${exactScore(s, p, query.vector, true)} AS score
       FROM candidates c JOIN ${s.schema}.mnemo_records r ON r.id = c.id
       WHERE c.score >= (SELECT threshold FROM bound)
     ),
     top AS MATERIALIZED (
       SELECT id, score FROM scored WHERE score IS NOT NULL
       ORDER BY score DESC, id COLLATE "C" ASC LIMIT ${p.add(query.limit, '::int')}
     )`;
  return { approximate, rescored };
}

export async function scanRecords(
  s: Session,
  page: { afterId?: string; limit: number },
): Promise<MemoryRecord[]> {
  const p = new Params();
  const rows = await s.all(
    `SELECT ${recordColumns(s.schema)} FROM ${s.schema}.mnemo_records r
     ${page.afterId === undefined ? '' : `WHERE r.id COLLATE "C" > ${p.add(page.afterId, '::text')}`}
     ORDER BY r.id COLLATE "C" LIMIT ${p.add(page.limit, '::int')}`,
    p,
  );
  return rows.map(rowToRecord);
}

export async function listGrants(s: Session, recordIds: readonly string[]): Promise<Grant[]> {
  if (recordIds.length === 0) return [];
  const p = new Params();
  const rows = await s.all(
    `SELECT * FROM ${s.schema}.mnemo_grants WHERE record_id = ANY(${p.texts(recordIds)})
     ORDER BY record_id COLLATE "C", grantee_org_id COLLATE "C" NULLS FIRST, grantee_agent_id COLLATE "C"`,
    p,
  );
  return rows.map(rowToGrant);
}

/**
 * The ids among `ids` that exist. Only an import looks ids up before inserting
 * them, so this takes the schema's import lock until the transaction ends: two
 * imports of the same records run one after the other, and the second finds
 * (and skips) what the first wrote instead of colliding with it.
 */
export async function findIds(s: Session, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const lock = new Params();
  await s.all(
    `SELECT pg_advisory_xact_lock(hashtextextended(${lock.add(`mnemo:import:${s.schema}`, '::text')}, 0))`,
    lock,
  );
  const p = new Params();
  const rows = await s.all(
    `SELECT id FROM ${s.schema}.mnemo_records WHERE id = ANY(${p.texts(ids)})`,
    p,
  );
  return rows.map((row) => row.id as string);
}

export async function readAudit(s: Session, page: AuditPage): Promise<AuditEvent[]> {
  const p = new Params();
  const after =
    page.after === undefined
      ? 'TRUE'
      : `(chain COLLATE "C", seq) > (${p.add(page.after.chain, '::text')} COLLATE "C", ${p.add(page.after.seq, '::bigint')})`;
  const rows = await s.all(
    `SELECT * FROM ${s.schema}.mnemo_audit_events WHERE ${after}
     ORDER BY chain COLLATE "C", seq LIMIT ${p.add(page.limit, '::int')}`,
    p,
  );
  return rows.map(rowToAuditEvent);
}

export async function auditHeads(s: Session): Promise<AuditHead[]> {
  const rows = await s.all(
    `SELECT chain, seq, hash FROM ${s.schema}.mnemo_audit_heads WHERE seq > 0 ORDER BY chain COLLATE "C"`,
  );
  return rows.map((row) => ({
    chain: row.chain as string,
    seq: Number(row.seq),
    hash: row.hash as string,
  }));
}

/**
 * The head of `chain`, locked until the transaction ends, so that concurrent
 * writers of one chain (in any process) append one after another. A new
 * chain gets a placeholder head (seq 0) first, so there is always a row to lock.
 */
export async function lockAuditHead(s: Session, chain: string): Promise<AuditHead | null> {
  const p = new Params();
  const [row] = await s.allPrepared(lockHead(s, p, chain), p);
  if (row === undefined || Number(row.seq) === 0) return null;
  return { chain: row.chain as string, seq: Number(row.seq), hash: row.hash as string };
}

/**
 * One statement that inserts the placeholder head of `chain` or, when the row
 * exists, "updates" it to itself, which locks it and returns its latest
 * committed version (READ COMMITTED).
 */
function lockHead(s: Session, p: Params, chain: string): string {
  return `INSERT INTO ${s.schema}.mnemo_audit_heads AS h (chain, seq, hash) VALUES (${p.add(chain, '::text')}, 0, '')
     ON CONFLICT (chain) DO UPDATE SET chain = h.chain
     RETURNING h.chain, h.seq, h.hash`;
}

/**
 * `lockAuditHead` for a writer that expects the chain's head to be `head`
 * (the one its process last committed): it locks the same row, then fails
 * with division_by_zero (SQLSTATE 22012, `STALE_HEAD_SQLSTATE`) when the head
 * is another, which rolls the transaction back. It is sent without waiting
 * for its reply, so a write whose head is as expected saves a round trip.
 */
export async function lockExpectedAuditHead(s: Session, head: AuditHead): Promise<void> {
  const p = new Params();
  await s.allPrepared(
    `WITH locked AS (${lockHead(s, p, head.chain)})
     SELECT CASE WHEN seq = ${p.add(head.seq, '::bigint')} AND hash = ${p.add(head.hash, '::text')} THEN 0
                 ELSE 1 / (seq - seq) END AS expected
     FROM locked`,
    p,
  );
}

/** What `lockExpectedAuditHead` fails with when the head is not the one expected. */
export const STALE_HEAD_SQLSTATE = '22012';

export async function appendAudit(s: Session, events: readonly AuditEvent[]): Promise<void> {
  if (events.length === 0) return;
  const p = new Params();
  const heads = new Map(events.map((event) => [event.chain, event]));
  // One statement: the events, and each chain's new head.
  await s.execPrepared(
    `WITH appended AS (INSERT INTO ${s.schema}.mnemo_audit_events (chain, seq, id, occurred_at, principal, op, record_ids, details, prev_hash, hash)
     SELECT e.chain, e.seq, e.id, e.occurred_at, e.principal, e.op,
            ARRAY(SELECT jsonb_array_elements_text(e.record_ids)), e.details, e.prev_hash, e.hash
     FROM jsonb_to_recordset(${p.add(
       JSON.stringify(
         events.map((e) => ({
           chain: e.chain,
           seq: e.seq,
           id: e.id,
           occurred_at: e.at.getTime(),
           principal: e.principal,
           op: e.op,
           record_ids: e.recordIds,
           details: e.details,
           prev_hash: e.prevHash,
           hash: e.hash,
         })),
       ),
       '::jsonb',
     )}) AS e(chain text, seq bigint, id text, occurred_at bigint, principal text, op text, record_ids jsonb,
              details jsonb, prev_hash text, hash text))
     INSERT INTO ${s.schema}.mnemo_audit_heads (chain, seq, hash)
     SELECT * FROM unnest(${p.texts([...heads.keys()])}, ${p.add(
       [...heads.values()].map((e) => e.seq),
       '::bigint[]',
     )},
                          ${p.texts([...heads.values()].map((e) => e.hash))})
     ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
    p,
  );
}

/**
 * The live records of `dedupKeys` (see the port), after locking the keys.
 * The lock and the lookup go out without waiting for `begun`, the
 * transaction's BEGIN (see PostgresStore.attempt): the server runs them in
 * order after it, and the result stands only once BEGIN has succeeded.
 */
export async function findLiveDuplicates(
  s: Session,
  dedupKeys: readonly string[],
  now: Date,
  begun: Promise<void>,
): Promise<Map<string, { id: string; contentHash: string }>> {
  const found = new Map<string, { id: string; contentHash: string }>();
  if (dedupKeys.length === 0) return begun.then(() => found);
  // Two processes remembering the same memory at once: the second waits here
  // until the first commits, then finds its record.
  const lock = new Params();
  const locked = s.allPrepared(
    `SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest(${lock.texts([...dedupKeys].sort())}) AS k`,
    lock,
  );
  // The one key of a lone `remember` is looked up by a prepared statement (planning it each
  // time cost sequential writes about a tenth of their rate); several keys are looked up by a
  // statement planned on every call, as lookups of many rows by key are (see Session).
  const p = new Params();
  const one = dedupKeys.length === 1;
  const sql = `SELECT dedup_key, id, content_hash FROM ${s.schema}.mnemo_records
     WHERE ${one ? `dedup_key = ${p.add(dedupKeys[0], '::text')}` : `dedup_key = ANY(${p.texts(dedupKeys)})`}
       AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > ${p.time(now)})
     ORDER BY id COLLATE "C"`;
  const lookup = one ? s.allPrepared(sql, p) : s.all(sql, p);
  const [, , rows] = await Promise.all([begun, locked, lookup]);
  for (const row of rows) {
    const key = row.dedup_key as string;
    if (!found.has(key))
      found.set(key, { id: row.id as string, contentHash: row.content_hash as string });
  }
  return found;
}

export async function insertRecords(
  s: Session,
  inputs: readonly NewRecord[],
  pgvector: boolean,
): Promise<void> {
  if (inputs.length === 0) return;
  const records = inputs.map((input) => input.record);
  const p = new Params();
  // Array parameters of one column each, by element type.
  const column = (type: string) => (values: readonly unknown[]) => p.add(values, `::${type}[]`);
  const [text, int, bigint] = [column('text'), column('int'), column('bigint')];
  const millis = (values: readonly (Date | null)[]) =>
    bigint(values.map((value) => value?.getTime() ?? null));
  // Lists (tags, plan tokens) travel as JSON text, since a PostgreSQL array parameter cannot be
  // ragged; embeddings as one binary real[] that each row slices its own out of.
  const vectors = packVectors(records.map((r) => r.embedding));
  const packed = p.add(vectors.array, '::real[]');
  const list = (column: string) => `ARRAY(SELECT jsonb_array_elements_text(${column}::jsonb))`;
  // One statement: the records (read once, as `src`), their postings and the statistics, as
  // data-modifying CTEs. `src` has one column per entry here, zipped by `unnest`.
  const columns: [name: string, param: string][] = [
    ['id', text(records.map((r) => r.id))],
    ['agent_id', text(records.map((r) => r.agentId))],
    ['org_id', text(records.map((r) => r.orgId))],
    ['content', text(records.map((r) => r.content))],
    ['memory_type', text(records.map((r) => r.memoryType))],
    ['scope', text(records.map((r) => r.scope))],
    ['importance', column('float8')(records.map((r) => r.importance))],
    ['tags', text(records.map((r) => JSON.stringify(r.tags)))],
    ['metadata', text(records.map((r) => JSON.stringify(r.metadata)))],
    ['embedding_start', int(vectors.starts)],
    ['embedding_length', int(vectors.lengths)],
    ['content_hash', text(records.map((r) => r.contentHash))],
    ['dedup_key', text(inputs.map((i) => i.dedupKey))],
    ['is_plan', column('boolean')(inputs.map((i) => i.isPlan))],
    ['doc_length', int(inputs.map((i) => i.docLength))],
    [
      'plan_tokens',
      text(inputs.map((i) => (i.planTokens === null ? null : JSON.stringify(i.planTokens)))),
    ],
    ['plan_token_count', int(inputs.map((i) => i.planTokens?.length ?? null))],
    ['thread_id', text(records.map((r) => r.threadId))],
    ['source_type', text(records.map((r) => r.sourceType))],
    ['created_at', millis(records.map((r) => r.createdAt))],
    ['updated_at', millis(records.map((r) => r.updatedAt))],
    ['expires_at', millis(records.map((r) => r.expiresAt))],
    ['deleted_at', millis(records.map((r) => r.deletedAt))],
    ['access_count', bigint(records.map((r) => r.accessCount))],
    ['last_accessed_at', millis(records.map((r) => r.lastAccessedAt))],
  ];
  const source = `SELECT * FROM unnest(${columns.map(([, param]) => param).join(', ')})
     WITH ORDINALITY AS x(${columns.map(([name]) => name).join(', ')}, n)`;
  const statements: string[] = [];
  statements.push(
    `INSERT INTO ${s.schema}.mnemo_records (id, agent_id, org_id, content, memory_type, scope, importance, tags, metadata,
       embedding, content_hash, dedup_key, is_plan, doc_length, plan_tokens, plan_token_keys, plan_token_count, thread_id,
       source_type, created_at, updated_at, expires_at, deleted_at, access_count, last_accessed_at)
     SELECT x.id, x.agent_id, x.org_id, x.content, x.memory_type, x.scope, x.importance, ${list('x.tags')},
       x.metadata::jsonb,
       (${packed})[x.embedding_start : x.embedding_start + x.embedding_length - 1]::${pgvector ? 'vector' : 'real[]'},
       x.content_hash, x.dedup_key, x.is_plan, x.doc_length,
       CASE WHEN x.plan_tokens IS NULL THEN NULL ELSE ${list('x.plan_tokens')} END,
       CASE WHEN x.plan_tokens IS NULL THEN NULL
            ELSE ARRAY(SELECT md5(t) FROM jsonb_array_elements_text(x.plan_tokens::jsonb) AS t) END,
       x.plan_token_count, x.thread_id, x.source_type, x.created_at, x.updated_at, x.expires_at, x.deleted_at,
       x.access_count, x.last_accessed_at
     FROM src x`,
  );
  // Postings only for live records (an imported deleted record has none anyway), each with
  // what BM25 and visibility need of its record (see migration 3), taken from `src` by the
  // record's ordinal.
  const postings = inputs.flatMap(({ record: r, terms, isPlan }, index) =>
    r.deletedAt !== null || isPlan ? [] : terms.map(({ term, tf }) => ({ term, tf, n: index + 1 })),
  );
  if (postings.length > 0) {
    statements.push(
      `INSERT INTO ${s.schema}.mnemo_postings (record_id, term, tf, agent_id, org_key, scope, memory_type, expires_at, doc_length)
       SELECT x.id, t.term, t.tf, x.agent_id, coalesce(x.org_id, ''), x.scope, x.memory_type, x.expires_at, x.doc_length
       FROM unnest(${int(postings.map((x) => x.n))}, ${text(postings.map((x) => x.term))},
                   ${int(postings.map((x) => x.tf))}) AS t(n, term, tf)
       JOIN src x ON x.n = t.n`,
    );
  }
  // A row per tag of each live record (see migration 11); tags are distinct (validated).
  if (
    inputs.some(({ record: r, isPlan }) => !isPlan && r.deletedAt === null && r.tags.length > 0)
  ) {
    statements.push(
      `INSERT INTO ${s.schema}.mnemo_record_tags (tag_key, record_id, agent_id, org_key, scope, memory_type, expires_at, doc_length)
       SELECT ${tagKey('t.tag')}, x.id, x.agent_id, coalesce(x.org_id, ''), x.scope, x.memory_type,
              x.expires_at, x.doc_length
       FROM src x CROSS JOIN LATERAL jsonb_array_elements_text(x.tags::jsonb) AS t(tag)
       WHERE x.deleted_at IS NULL AND NOT x.is_plan`,
    );
  }
  const counted = inputs.filter(
    ({ record: r, isPlan }) => !isPlan && r.deletedAt === null && r.expiresAt === null,
  );
  for (const statement of [addLexicalStats(s, p, counted), addTermStats(s, p, counted)]) {
    if (statement !== null) statements.push(statement);
  }
  const last = statements.pop() as string;
  const writes = statements.map((statement, index) => `, w${index} AS (${statement})`).join('');
  // Both go out at once: the plan tokens' count reads nothing of the records' reply.
  await Promise.all([
    s.execPrepared(`WITH src AS (${source})${writes} ${last}`, p),
    countPlanTokens(s, inputs),
  ]);
}

/** The statement adding records (live, non-plan, without expiry) to `mnemo_lexical_stats`, in key order; null when none. */
function addLexicalStats(s: Session, p: Params, inputs: readonly NewRecord[]): string | null {
  const groups = new Map<
    string,
    { agent: string; org: string; scope: string; type: string; n: number; len: number }
  >();
  for (const { record: r, docLength } of inputs) {
    const org = r.orgId ?? '';
    const key = JSON.stringify([r.agentId, org, r.scope, r.memoryType]);
    const group = groups.get(key) ?? {
      agent: r.agentId,
      org,
      scope: r.scope,
      type: r.memoryType,
      n: 0,
      len: 0,
    };
    group.n += 1;
    group.len += docLength;
    groups.set(key, group);
  }
  if (groups.size === 0) return null;
  const rows = [...groups.values()];
  const counts = (values: number[]) => p.add(values, '::bigint[]');
  return upsertLexicalStats(
    s,
    `SELECT * FROM unnest(${p.texts(rows.map((g) => g.agent))}, ${p.texts(rows.map((g) => g.org))},
       ${p.texts(rows.map((g) => g.scope))}, ${p.texts(rows.map((g) => g.type))},
       ${counts(rows.map((g) => g.n))}, ${counts(rows.map((g) => g.len))})
       AS t(agent_id, org_key, scope, memory_type, records, total_length)`,
  );
}

/**
 * Adds the rows of `source` (agent_id, org_key, scope, memory_type, records,
 * total_length) to `mnemo_lexical_stats`, in key order, so that writers
 * adding and removing records lock these rows in one order.
 */
function upsertLexicalStats(s: Session, source: string): string {
  return `INSERT INTO ${s.schema}.mnemo_lexical_stats AS st (agent_id, org_key, scope, memory_type, records, total_length)
     SELECT * FROM (${source}) x
     ORDER BY x.agent_id COLLATE "C", x.org_key COLLATE "C", x.scope COLLATE "C", x.memory_type COLLATE "C"
     ON CONFLICT (agent_id, org_key, scope, memory_type) DO UPDATE
       SET records = st.records + excluded.records, total_length = st.total_length + excluded.total_length`;
}

/**
 * The statement adding the postings of records (live, non-plan, without
 * expiry) to `mnemo_term_stats`; null when none. The records are grouped by
 * owner, scope and type first, then each group's postings by term: a key
 * per posting (some 8,000 in a chunk of 500 records) cost a chunk's write
 * about 4 ms before its statement could be sent.
 */
function addTermStats(s: Session, p: Params, inputs: readonly NewRecord[]): string | null {
  const groups = new Map<
    string,
    {
      agent: string;
      org: string;
      scope: string;
      type: string;
      terms: Map<string, { df: number; tf: number; len: number }>;
    }
  >();
  for (const { record: r, terms, docLength } of inputs) {
    if (terms.length === 0) continue;
    const org = r.orgId ?? '';
    const key = JSON.stringify([r.agentId, org, r.scope, r.memoryType]);
    let group = groups.get(key);
    if (group === undefined) {
      group = { agent: r.agentId, org, scope: r.scope, type: r.memoryType, terms: new Map() };
      groups.set(key, group);
    }
    for (const { term, tf } of terms) {
      const stats = group.terms.get(term);
      if (stats === undefined) {
        group.terms.set(term, { df: 1, tf, len: docLength });
      } else {
        stats.df += 1;
        stats.tf = Math.max(stats.tf, tf);
        stats.len = Math.min(stats.len, docLength);
      }
    }
  }
  const rows = [...groups.values()].flatMap(({ terms, ...group }) =>
    [...terms].map(([term, stats]) => ({ term, ...group, ...stats })),
  );
  if (rows.length === 0) return null;
  const ints = (values: number[], type: string) => p.add(values, `::${type}[]`);
  return upsertTermStats(
    s,
    `SELECT * FROM unnest(${p.texts(rows.map((g) => g.term))}, ${p.texts(rows.map((g) => g.agent))},
       ${p.texts(rows.map((g) => g.org))}, ${p.texts(rows.map((g) => g.scope))},
       ${p.texts(rows.map((g) => g.type))}, ${ints(
         rows.map((g) => g.df),
         'bigint',
       )}, ${ints(
         rows.map((g) => g.tf),
         'int',
       )}, ${ints(
         rows.map((g) => g.len),
         'int',
       )}) AS t(term, agent_id, org_key, scope, memory_type, df, max_tf, min_length)`,
  );
}

/**
 * Adds the rows of `source` (term, agent_id, org_key, scope, memory_type,
 * df, max_tf, min_length) to `mnemo_term_stats`, in key order, so that
 * writers adding and removing postings lock these rows in one order and
 * never deadlock.
 */
function upsertTermStats(s: Session, source: string): string {
  return `INSERT INTO ${s.schema}.mnemo_term_stats AS ts (term, agent_id, org_key, scope, memory_type, df, max_tf, min_length)
     SELECT * FROM (${source}) x
     ORDER BY x.term COLLATE "C", x.agent_id COLLATE "C", x.org_key COLLATE "C", x.scope COLLATE "C",
       x.memory_type COLLATE "C"
     ON CONFLICT (term, agent_id, org_key, scope, memory_type) DO UPDATE
       SET df = ts.df + excluded.df, max_tf = greatest(ts.max_tf, excluded.max_tf),
           min_length = least(ts.min_length, excluded.min_length)`;
}

/**
 * Takes records out of `mnemo_lexical_stats` before they are deleted or
 * redacted: those that are still counted (live, non-plan, without expiry).
 * Call after `lockRecords`.
 */
async function removeLexicalStats(s: Session, ids: readonly string[]): Promise<void> {
  const p = new Params();
  await s.exec(
    upsertLexicalStats(
      s,
      `SELECT agent_id, coalesce(org_id, '') AS org_key, scope, memory_type, -count(*), -sum(doc_length)
       FROM ${s.schema}.mnemo_records
       WHERE id = ANY(${p.texts(ids)}) AND NOT is_plan AND deleted_at IS NULL AND expires_at IS NULL
       GROUP BY 1, 2, 3, 4`,
    ),
    p,
  );
}

/**
 * Locks the records' rows in id order. Every transaction that changes
 * existing records locks them this way first, so two of them never wait on
 * each other in opposite orders (a deadlock).
 */
export async function lockRecords(s: Session, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const p = new Params();
  await s.all(
    `SELECT id FROM ${s.schema}.mnemo_records WHERE id = ANY(${p.texts(ids)}) ORDER BY id COLLATE "C" FOR UPDATE`,
    p,
  );
}

/**
 * Deletes the records' postings and tag rows, and takes the postings without
 * an expiry out of `mnemo_term_stats`, deleting the rows whose count
 * reaches 0.
 */
async function deletePostings(s: Session, ids: readonly string[]): Promise<void> {
  const p = new Params();
  const records = p.texts(ids);
  // A negative df, and bounds that leave the row's own as they are.
  const emptied = await s.all(
    `WITH untagged AS (DELETE FROM ${s.schema}.mnemo_record_tags WHERE record_id = ANY(${records})),
     gone AS (
       DELETE FROM ${s.schema}.mnemo_postings WHERE record_id = ANY(${records})
       RETURNING term, agent_id, org_key, scope, memory_type, expires_at
     )
     ${upsertTermStats(
       s,
       `SELECT term, agent_id, org_key, scope, memory_type, -count(*), 0, ${2 ** 31 - 1} FROM gone
        WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4, 5`,
     )}
     RETURNING ts.term, ts.agent_id, ts.org_key, ts.scope, ts.memory_type, ts.df`,
    p,
  );
  const rows = emptied.filter((row) => Number(row.df) === 0);
  if (rows.length === 0) return;
  // Rows this transaction has just locked, so no new lock and no new order.
  const d = new Params();
  const column = (name: string) => d.texts(rows.map((row) => row[name] as string));
  await s.exec(
    `DELETE FROM ${s.schema}.mnemo_term_stats ts
     USING unnest(${column('term')}, ${column('agent_id')}, ${column('org_key')}, ${column('scope')},
                  ${column('memory_type')}) AS x(term, agent_id, org_key, scope, memory_type)
     WHERE ts.term = x.term AND ts.agent_id = x.agent_id AND ts.org_key = x.org_key
       AND ts.scope = x.scope AND ts.memory_type = x.memory_type AND ts.df = 0`,
    d,
  );
}

export async function deleteRecords(
  s: Session,
  ids: readonly string[],
  mode: 'soft' | 'hard',
  at: Date,
): Promise<void> {
  await lockRecords(s, ids);
  // mnemo_term_stats before mnemo_lexical_stats (each in key order), the order in which a
  // write of new records locks them (insertRecords' statement runs its main query, the term
  // statistics, first, then its data-modifying CTEs from the last to the first).
  await deletePostings(s, ids);
  await removeLexicalStats(s, ids);
  if (mode === 'hard') await forgetPlans(s, ids);
  else await forgetPlanStats(s, ids);
  const p = new Params();
  if (mode === 'hard') {
    const g = new Params();
    await s.exec(`DELETE FROM ${s.schema}.mnemo_grants WHERE record_id = ANY(${g.texts(ids)})`, g);
    await forgetAccesses(s, ids);
    await s.exec(`DELETE FROM ${s.schema}.mnemo_records WHERE id = ANY(${p.texts(ids)})`, p);
  } else {
    const time = p.time(at);
    await s.exec(
      `UPDATE ${s.schema}.mnemo_records SET deleted_at = ${time}, updated_at = ${time} WHERE id = ANY(${p.texts(ids)})`,
      p,
    );
  }
}

export async function redactRecords(
  s: Session,
  ids: readonly string[],
  content: string,
  at: Date,
): Promise<void> {
  await lockRecords(s, ids);
  await deletePostings(s, ids);
  await removeLexicalStats(s, ids);
  await forgetPlans(s, ids);
  const p = new Params();
  const time = p.time(at);
  await s.exec(
    `UPDATE ${s.schema}.mnemo_records
     SET content = ${p.add(content, '::text')}, metadata = '{}'::jsonb, embedding = NULL, doc_length = 0,
         plan_tokens = NULL, plan_token_keys = NULL, plan_token_count = NULL, deleted_at = ${time}, updated_at = ${time}
     WHERE id = ANY(${p.texts(ids)})`,
    p,
  );
}

export async function putGrants(s: Session, grants: readonly Grant[]): Promise<void> {
  for (const grant of grants) {
    const d = new Params();
    await s.exec(
      `DELETE FROM ${s.schema}.mnemo_grants WHERE record_id = ${d.add(grant.recordId, '::text')}
         AND grantee_agent_id = ${d.add(grant.granteeAgentId, '::text')}
         AND grantee_org_id IS NOT DISTINCT FROM ${d.add(grant.granteeOrgId, '::text')}`,
      d,
    );
    const p = new Params();
    await s.exec(
      `INSERT INTO ${s.schema}.mnemo_grants (record_id, grantee_agent_id, grantee_org_id, level, granted_by, created_at, expires_at)
       VALUES (${p.add(grant.recordId, '::text')}, ${p.add(grant.granteeAgentId, '::text')}, ${p.add(grant.granteeOrgId, '::text')},
               ${p.add(permissionLevel(grant.permission), '::int')}, ${p.add(grant.grantedBy, '::text')},
               ${p.time(grant.createdAt)}, ${p.time(grant.expiresAt)})`,
      p,
    );
  }
}
