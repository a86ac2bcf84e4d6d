import { createHash } from 'node:crypto';
import {
  ARRAY,
  BIGINT,
  BOOLEAN,
  DOUBLE,
  type DuckDBType,
  type DuckDBValue,
  FLOAT,
  INTEGER,
  LIST,
  listValue,
  VARCHAR,
} from '@duckdb/node-api';
import {
  type AuditEvent,
  type AuditHead,
  type AuditPage,
  BM25_B,
  BM25_K1,
  type Grant,
  type LexicalQuery,
  type ListQuery,
  type MemoryRecord,
  type NewRecord,
  permissionFromLevel,
  permissionLevel,
  type ScoredRecord,
  type VectorQuery,
  type Visibility,
  type VisibleRecord,
} from '@mnemo/core';
import { forgetAccesses } from './access-log.js';
import { appendRows } from './append.js';
import { rowToAuditEvent, rowToGrant, rowToRecord } from './rows.js';
import type { Row, Session } from './session.js';
import {
  filterPredicate,
  noFilters,
  Params,
  permissionLevelExpression,
  RECORD_COLUMNS,
  visiblePredicate,
  visibleRecords,
} from './sql.js';

// Every SQL statement of the store, as functions of a session, so the same
// reads run outside a transaction (a pooled reader) and inside one (the writer).

/**
 * Scores are rounded to this many decimals before ranking. Databases add a
 * sum in different orders and so differ in the last bits; rounding turns those
 * near-ties into ties, which break by id, so every store ranks the same data
 * the same way (and the same store ranks it the same way every time).
 */
const SCORE_DIGITS = 10;

function toVisible(row: Row): VisibleRecord {
  const permission = permissionFromLevel(Number(row.permission_level));
  return { record: rowToRecord(row), permission: permission ?? 'read' };
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
    `SELECT ${RECORD_COLUMNS}, ${permissionLevelExpression(p, visibility)} AS permission_level
     FROM mnemo_records r
     WHERE r.id IN (SELECT unnest(${p.strings(ids)})) AND ${visiblePredicate(p, visibility)}`,
    p,
  );
  return rows.map(toVisible);
}

export async function listRecords(s: Session, query: ListQuery): Promise<VisibleRecord[]> {
  const p = new Params();
  const rows = await s.all(
    `SELECT ${RECORD_COLUMNS}, ${permissionLevelExpression(p, query.visibility)} AS permission_level
     FROM mnemo_records r
     WHERE ${visiblePredicate(p, query.visibility)} AND ${filterPredicate(p, query.filters)}
       ${query.includePlans === true ? '' : 'AND NOT r.is_plan'}
       ${query.afterId === undefined ? '' : `AND r.id > ${p.scalar(query.afterId)}`}
     ORDER BY r.id
     ${query.limit === undefined ? '' : `LIMIT ${p.scalar(query.limit)}`}`,
    p,
  );
  return rows.map(toVisible);
}

/** The most terms whose sorted postings a lexical search reads with a branch each (see there). */
const SORTED_BRANCHES = 64;

/**
 * BM25 (see the port). The collection statistics come from the visible,
 * filtered records; the query's postings are read first (left to itself,
 * DuckDB joined every posting to the visible records before filtering by
 * term: 1.5M rows at 100k records). Without filters, the postings' own copy
 * of their record's owner, scope, expiry and length decides visibility, so
 * no posting is joined to a record; with filters, they are joined to the
 * visible, filtered records.
 */
export async function searchLexical(s: Session, query: LexicalQuery): Promise<ScoredRecord[]> {
  const p = new Params();
  const v = query.visibility;
  const unfiltered = noFilters(query.filters);
  // The postings of the query's terms, read before anything else filters them. Each distinct
  // term has a key (an integer computed here, so safe to inline) and a place in the query:
  // postings are found by key, checked by term as they are read (a key collision must not
  // count another term's postings), and then counted and grouped by place, an integer
  // (grouping some 35,000 postings by the term string made lexical recall at 100k records
  // about 15 % slower). The fresh postings (at most a run, in write order) are read in one
  // scan: a join with the terms as a VALUES list (an `IN` list DuckDB applied only after
  // reading every column of every posting; one scan per term read the table once per term).
  // The sorted ones (see postings-runs.ts) with one key equality per term, which DuckDB checks
  // against each row group's term key range, so it reads a few row groups per run (with an
  // `IN` list, lexical recall at 100k records took 1.5 times as long).
  const terms = [...new Set(query.terms)].map((term, place) => ({
    key: termKey(term),
    term: p.scalar(term),
    place,
  }));
  const columns = (t: string) =>
    `${t}.record_id, ${t}.tf, ${t}.agent_id, ${t}.org_key, ${t}.scope, ${t}.expires_at, ${t}.doc_length`;
  const queryTerms = `(VALUES ${terms.map(({ key, term, place }) => `(${key}::BIGINT, ${term}, ${place})`).join(', ')}) q(term_key, term, place)`;
  // Past SORTED_BRANCHES terms (a pasted document), the sorted postings are joined with the
  // terms in one scan too: 20,000 branches took 12 s to plan and run (2,000 records).
  const sorted =
    terms.length > SORTED_BRANCHES
      ? `SELECT ${columns('ps')}, q.place FROM mnemo_postings_sorted ps
       JOIN ${queryTerms} ON ps.term_key = q.term_key AND ps.term = q.term`
      : terms
          .map(
            ({
              key,
              term,
              place,
            }) => `SELECT ${columns('ps')}, ${place} FROM mnemo_postings_sorted ps
       WHERE ps.term_key = ${key} AND ps.term = ${term}`,
          )
          .join('\n       UNION ALL\n       ');
  const matching = `matching AS MATERIALIZED (
       SELECT ${columns('po')}, q.place FROM mnemo_postings po
       JOIN ${queryTerms} ON po.term_key = q.term_key AND po.term = q.term
       UNION ALL
       ${sorted}
     )`;
  let sources: string;
  if (unfiltered) {
    const agent = p.scalar(v.agentId);
    const orgKey = p.scalar(v.orgId ?? '');
    const now = p.time(v.now);
    sources = `${matching},
     stats AS (
       SELECT count(*)::DOUBLE AS n, coalesce(avg(doc_length), 0)::DOUBLE AS avgdl
       FROM (${visibleRecords(p, v, query.filters, 'r.doc_length')})
     ),
     hits AS MATERIALIZED (
       SELECT po.record_id, po.place, po.tf::DOUBLE AS tf, po.doc_length::DOUBLE AS dl
       FROM matching po
       WHERE (po.expires_at IS NULL OR po.expires_at > ${now})
         AND ((po.agent_id = ${agent} AND po.org_key = ${orgKey}) OR po.scope = 'global'
              OR (po.scope = 'public' AND po.org_key = ${orgKey})
              OR (po.scope = 'shared' AND po.record_id IN (
                SELECT g.record_id FROM mnemo_grants g
                WHERE g.grantee_agent_id = ${agent} AND g.grantee_org_id IS NOT DISTINCT FROM ${p.scalar(v.orgId)}
                  AND (g.expires_at IS NULL OR g.expires_at > ${now}))))
     )`;
  } else {
    sources = `visible AS MATERIALIZED (${visibleRecords(p, v, query.filters, 'r.id, r.doc_length')}),
     stats AS (SELECT count(*)::DOUBLE AS n, coalesce(avg(doc_length), 0)::DOUBLE AS avgdl FROM visible),
     ${matching},
     hits AS (
       SELECT m.record_id, m.place, m.tf::DOUBLE AS tf, vr.doc_length::DOUBLE AS dl
       FROM matching m JOIN visible vr ON vr.id = m.record_id
     )`;
  }
  const k1 = p.scalar(BM25_K1);
  const b = p.scalar(BM25_B);
  const rows = await s.all(
    `WITH ${sources},
     -- Each term's idf beside the collection's avgdl, computed once per term: joining every
     -- hit to the statistics instead made lexical recall at 100k records about 10 % slower.
     weights AS (
       SELECT d.place, ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5)) AS idf, st.avgdl
       FROM (SELECT place, count(*)::DOUBLE AS df FROM hits GROUP BY place) d CROSS JOIN stats st
     ),
     scored AS (
       SELECT h.record_id,
              round(sum(w.idf * h.tf * (${k1} + 1) / (h.tf + ${k1} * (1 - ${b} + ${b} * h.dl / w.avgdl))), ${SCORE_DIGITS}) AS score
       FROM hits h JOIN weights w ON w.place = h.place
       GROUP BY h.record_id
     ),
     -- The top ids first, so only they fetch their rows (content, embedding): joining every
     -- scored record to its row before the limit read every matching record whole.
     top AS (
       SELECT record_id, score FROM scored ORDER BY score DESC, record_id ASC LIMIT ${p.scalar(query.limit)}
     )
     SELECT ${RECORD_COLUMNS}, top.score
     FROM top JOIN mnemo_records r ON r.id = top.record_id
     ORDER BY top.score DESC, r.id ASC`,
    p,
  );
  return rows.map(toScored);
}

/** The size every embedding of this store has, fixed by the first one stored (or by the schema). */
export async function embeddingDimensions(s: Session): Promise<number | null> {
  const [row] = await s.all(`SELECT value FROM mnemo_settings WHERE key = 'embedding_dimensions'`);
  return row === undefined ? null : Number(row.value);
}

/** The size of the `FLOAT[n]` embedding column, or null while it is a `FLOAT[]` list. */
export async function embeddingColumnSize(s: Session): Promise<number | null> {
  const [column] = await s.all(
    `SELECT data_type FROM information_schema.columns WHERE table_name = 'mnemo_records' AND column_name = 'embedding'`,
  );
  const size = /^FLOAT\[(\d+)\]$/.exec(String(column?.data_type ?? ''))?.[1];
  return size === undefined ? null : Number(size);
}

/** The largest size of a `FLOAT[n]` embedding column. */
export const MAX_FIXED_DIMENSIONS = 65_535;

/**
 * Makes a `FLOAT[]` embedding column a `FLOAT[size]` array; returns whether it did: not past
 * MAX_FIXED_DIMENSIONS, nor when a stored embedding has another size (only a file edited by
 * hand holds one). DuckDB 1.5 logs a commit that appends non-empty lists with the list values
 * of every row appended to the table since the last checkpoint, not just its own: a
 * `remember` of a 384-d embedding logged 1.5 KB more per record written since the checkpoint,
 * so commits grew longer and the log reached the checkpoint threshold every 150 writes or so.
 * An array logs its own values. DuckDB alters no column of a table with an index, so the
 * dedup index goes and comes back.
 */
export async function fixEmbeddingColumn(s: Session, size: number): Promise<boolean> {
  if (!Number.isInteger(size) || size < 1 || size > MAX_FIXED_DIMENSIONS) return false;
  const [other] = await s.all(
    `SELECT 1 FROM mnemo_records WHERE len(embedding) <> ${size} LIMIT 1`,
  );
  if (other !== undefined) return false;
  await s.exec('DROP INDEX mnemo_records_dedup_key');
  await s.exec(`ALTER TABLE mnemo_records ALTER embedding TYPE FLOAT[${size}]`);
  await s.exec('CREATE INDEX mnemo_records_dedup_key ON mnemo_records (dedup_key)');
  return true;
}

/** Fixes the embedding size unless one is fixed; returns the size in force. */
export async function fixEmbeddingDimensions(s: Session, size: number): Promise<number> {
  const p = new Params();
  await s.exec(
    `INSERT OR IGNORE INTO mnemo_settings VALUES ('embedding_dimensions', ${p.scalar(String(size))})`,
    p,
  );
  return (await embeddingDimensions(s)) ?? size;
}

/** The Euclidean norm of a vector, summed in DOUBLE (as migration 7 computes it). */
function vectorNorm(vector: Float32Array): number {
  let sum = 0;
  for (const x of vector) sum += x * x;
  return Math.sqrt(sum);
}

/**
 * Norms within which a FLOAT inner product of two vectors obeys `estimateError`: every
 * product and partial sum is at most the norms' product (Cauchy–Schwarz), at most 2^80, far
 * from FLOAT's overflow; and what underflow loses (at most n × 2^-149) is negligible against
 * the norms' product, at least 2^-80.
 */
const SAFE_NORMS = { min: 2 ** -40, max: 2 ** 40 };

/**
 * How far a similarity estimated in FLOAT (see `searchVector`) may be from the exact one, in
 * cosine units, for two `n`-dimensional vectors with norms in SAFE_NORMS: a FLOAT sum of n
 * rounded products is off by at most γn = n·u / (1 − n·u), u = 2^-24, times the sum of the
 * products' magnitudes (in any order of summation), which is at most the product of the
 * norms. The slack covers the DOUBLE steps (the norms, the division, DuckDB's own cosine).
 */
function estimateError(n: number): number {
  const nu = n * 2 ** -24;
  return (nu / (1 - nu)) * 1.01 + n * 2 ** -50;
}

/** Candidates the estimating pass of a vector search rescores, for `limit` results. */
const candidatePlaces = (limit: number) => 4 * limit + 64;

/** The cosine of column `embedding` and the query vector, in DOUBLE, and the column's inner product function. */
function exactCosine(vector: string, fixed: number | null): [string, string] {
  return fixed === null
    ? [`list_cosine_similarity(embedding::DOUBLE[], ${vector}::DOUBLE[])`, 'list_inner_product']
    : [
        `array_cosine_similarity(embedding::DOUBLE[${fixed}], ${vector}::DOUBLE[${fixed}])`,
        'array_inner_product',
      ];
}

/**
 * Cosine similarity, exactly as DOUBLE arithmetic has it. Every visible embedding is read, so
 * the cost is in each row's arithmetic. Computing the cosine in DOUBLE means casting every
 * FLOAT first (about a quarter of the query at 100k records), so the search estimates every
 * similarity in FLOAT instead, as the inner product over the stored norm, keeps the best
 * estimates (`candidatePlaces`) and scores only those exactly. The estimates are off by at
 * most `estimateError`, so every record of the exact top has an estimate within twice that
 * of the `limit`-th best estimate: when the candidates reach that far down, they hold the
 * exact top, and the answer is the exact one. Otherwise (more near-ties than places), and for
 * a query vector whose norm is outside SAFE_NORMS, every similarity is computed in DOUBLE.
 * `fixed`: the size of a `FLOAT[n]` column, or null for a `FLOAT[]` list column.
 */
export async function searchVector(
  s: Session,
  query: VectorQuery,
  fixed: number | null,
): Promise<ScoredRecord[]> {
  // A zero vector has no direction, so nothing is similar to it (NaN, as PostgreSQL has it),
  // but DuckDB's cosine functions return -1 for it: a zero query finds nothing, and a stored
  // zero vector scores NULL.
  if (query.vector.every((x) => x === 0)) return [];
  const norm = vectorNorm(query.vector);
  if (norm >= SAFE_NORMS.min && norm <= SAFE_NORMS.max) {
    const found = await searchVectorByEstimates(s, query, fixed, norm);
    if (found !== null) return found;
  }
  return searchVectorExactly(s, query, fixed);
}

/** The exact top from the best estimates (see `searchVector`), or null when they cannot tell. */
async function searchVectorByEstimates(
  s: Session,
  query: VectorQuery,
  fixed: number | null,
  norm: number,
): Promise<ScoredRecord[] | null> {
  const p = new Params();
  const vector = p.floats(query.vector);
  const [similarity, innerProduct] = exactCosine(vector, fixed);
  const estimateProduct = `${innerProduct}(r.embedding, ${fixed === null ? vector : `${vector}::FLOAT[${fixed}]`})`;
  const places = candidatePlaces(query.limit);
  const limit = p.scalar(query.limit);
  // In estimate units (the query's norm times a cosine): twice the error, and the rounding of
  // scores (a record up to 1e-10 below the limit-th can tie with it, and win on its id).
  const margin = p.scalar(norm * (2 * estimateError(query.vector.length) + 10 ** -SCORE_DIGITS));
  // A record whose norm is outside SAFE_NORMS is estimated as +inf: always a candidate.
  // (Every embedding has its norm: written with it, computed by migration 7, cleared with
  // it.) A zero vector scores NULL, which is never returned, so it is left out. The
  // verdict: every visible record is a candidate, or the worst candidate's estimate is more than
  // the margin below the limit-th finite estimate.
  const rows = await s.all(
    `WITH candidates AS MATERIALIZED (
       SELECT id, embedding, estimate FROM (
         SELECT r.id, r.embedding,
                CASE WHEN r.embedding_norm BETWEEN ${p.scalar(SAFE_NORMS.min)} AND ${p.scalar(SAFE_NORMS.max)}
                     THEN ${estimateProduct} / r.embedding_norm
                     ELSE 'inf'::DOUBLE END AS estimate
         FROM (${visibleRecords(p, query.visibility, query.filters, 'r.id, r.embedding, r.embedding_norm')}) r
         WHERE r.embedding IS NOT NULL AND r.embedding_norm IS DISTINCT FROM 0
       ) estimated
       ORDER BY estimate DESC, id ASC
       LIMIT ${p.scalar(places)}
     ),
     verdict AS (
       SELECT count(*) < ${p.scalar(places)} OR coalesce(min(estimate) < list_sort(
                list(estimate) FILTER (WHERE estimate < 'inf'::DOUBLE), 'DESC')[${limit}] - ${margin},
              false) AS exact
       FROM candidates
     ),
     top AS (
       SELECT id, round(${similarity}, ${SCORE_DIGITS}) AS score FROM candidates
       ORDER BY score DESC, id ASC
       LIMIT ${limit}
     )
     SELECT verdict.exact, ${RECORD_COLUMNS}, top.score
     FROM verdict LEFT JOIN (top JOIN mnemo_records r ON r.id = top.id) ON TRUE
     ORDER BY top.score DESC NULLS LAST, r.id ASC`,
    p,
  );
  if (rows[0]?.exact !== true) return null;
  return rows.filter((row) => row.id !== null).map(toScored);
}

/**
 * A vector search's score as SQL: `similarity`, the cosine of column
 * `embedding` with `vector` (a parameter), and `score`, computed from a
 * column `similarity` holding it: rounded, and NULL for a stored zero vector
 * (whose norm is computed only when its similarity is exactly -1) or NaN.
 */
export function cosineScore(
  vector: string,
  fixed: number | null,
): { similarity: string; score: string } {
  const [similarity, innerProduct] = exactCosine(vector, fixed);
  return {
    similarity,
    score: `CASE WHEN similarity = -1 AND ${innerProduct}(embedding, embedding) = 0 THEN NULL
                 ELSE nullif(round(similarity, ${SCORE_DIGITS}), 'NaN'::DOUBLE) END`,
  };
}

/** Every visible similarity in DOUBLE. */
async function searchVectorExactly(
  s: Session,
  query: VectorQuery,
  fixed: number | null,
): Promise<ScoredRecord[]> {
  const p = new Params();
  const { similarity, score } = cosineScore(p.floats(query.vector), fixed);
  // The top ids first, then their rows: only the winners fetch content and metadata. A NULL
  // score sorts last, so the top holds every real score there is before any NULL, and NULLs
  // are dropped only after the limit: a test on the score before it was pushed into the scan
  // by DuckDB, which then computed each similarity twice.
  const rows = await s.all(
    `WITH top AS (
       SELECT id, score FROM (
         SELECT id, ${score} AS score
         FROM (
           SELECT r.id, r.embedding, ${similarity} AS similarity
           FROM (${visibleRecords(p, query.visibility, query.filters, 'r.id, r.embedding')}) r
           WHERE r.embedding IS NOT NULL
         ) scored
         ORDER BY score DESC NULLS LAST, id ASC
         LIMIT ${p.scalar(query.limit)}
       ) ranked
       WHERE score IS NOT NULL
     )
     SELECT ${RECORD_COLUMNS}, top.score
     FROM top JOIN mnemo_records r ON r.id = top.id
     ORDER BY top.score DESC, r.id ASC`,
    p,
  );
  return rows.map(toScored);
}

export async function scanRecords(
  s: Session,
  page: { afterId?: string; limit: number },
): Promise<MemoryRecord[]> {
  const p = new Params();
  const rows = await s.all(
    `SELECT ${RECORD_COLUMNS} FROM mnemo_records r
     ${page.afterId === undefined ? '' : `WHERE r.id > ${p.scalar(page.afterId)}`}
     ORDER BY r.id LIMIT ${p.scalar(page.limit)}`,
    p,
  );
  return rows.map(rowToRecord);
}

export async function listGrants(s: Session, recordIds: readonly string[]): Promise<Grant[]> {
  if (recordIds.length === 0) return [];
  const p = new Params();
  const rows = await s.all(
    `SELECT * FROM mnemo_grants WHERE record_id IN (SELECT unnest(${p.strings(recordIds)}))
     ORDER BY record_id, grantee_org_id NULLS FIRST, grantee_agent_id`,
    p,
  );
  return rows.map(rowToGrant);
}

export async function findIds(s: Session, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const p = new Params();
  const rows = await s.all(
    `SELECT id FROM mnemo_records WHERE id IN (SELECT unnest(${p.strings(ids)}))`,
    p,
  );
  return rows.map((row) => row.id as string);
}

export async function readAudit(s: Session, page: AuditPage): Promise<AuditEvent[]> {
  const p = new Params();
  const after =
    page.after === undefined
      ? 'TRUE'
      : `(chain > ${p.scalar(page.after.chain)} OR (chain = ${p.scalar(page.after.chain)} AND seq > ${p.scalar(page.after.seq)}))`;
  const rows = await s.all(
    `SELECT * FROM mnemo_audit_events WHERE ${after} ORDER BY chain, seq LIMIT ${p.scalar(page.limit)}`,
    p,
  );
  return rows.map(rowToAuditEvent);
}

export async function auditHeads(s: Session): Promise<AuditHead[]> {
  const rows = await s.all('SELECT chain, seq, hash FROM mnemo_audit_heads ORDER BY chain');
  return rows.map((row) => ({
    chain: row.chain as string,
    seq: Number(row.seq),
    hash: row.hash as string,
  }));
}

export async function auditHead(s: Session, chain: string): Promise<AuditHead | null> {
  const p = new Params();
  const [row] = await s.all(
    `SELECT chain, seq, hash FROM mnemo_audit_heads WHERE chain = ${p.scalar(chain)}`,
    p,
  );
  return row === undefined
    ? null
    : { chain: row.chain as string, seq: Number(row.seq), hash: row.hash as string };
}

export async function appendAudit(s: Session, events: readonly AuditEvent[]): Promise<void> {
  const [single] = events;
  if (single === undefined) return;
  if (events.length === 1) {
    // A recall's or a lone remember's event: a prepared one-row insert costs half an appender.
    const p = new Params();
    await s.execPrepared(
      `INSERT INTO mnemo_audit_events VALUES (${p.scalar(single.chain)}, ${p.scalar(single.seq)},
         ${p.scalar(single.id)}, ${p.time(single.at)}, ${p.scalar(single.principal)}, ${p.scalar(single.op)},
         ${p.scalar(JSON.stringify(single.recordIds))}, ${p.scalar(JSON.stringify(single.details))},
         ${p.scalar(single.prevHash)}, ${p.scalar(single.hash)})`,
      p,
    );
  } else {
    const strings = (values: readonly string[]) => ({ type: VARCHAR, values });
    await appendRows(s, 'mnemo_audit_events', [
      strings(events.map((e) => e.chain)),
      { type: BIGINT, values: events.map((e) => BigInt(e.seq)) },
      strings(events.map((e) => e.id)),
      { type: BIGINT, values: events.map((e) => BigInt(e.at.getTime())) },
      strings(events.map((e) => e.principal)),
      strings(events.map((e) => e.op)),
      strings(events.map((e) => JSON.stringify(e.recordIds))),
      strings(events.map((e) => JSON.stringify(e.details))),
      strings(events.map((e) => e.prevHash)),
      strings(events.map((e) => e.hash)),
    ]);
  }
  // The new head of each chain: an UPDATE of the row, or its INSERT for a chain's first event.
  const firsts = new Map<string, number>();
  const heads = new Map<string, AuditEvent>();
  for (const event of events) {
    if (!firsts.has(event.chain)) firsts.set(event.chain, event.seq);
    heads.set(event.chain, event);
  }
  for (const [chain, head] of heads) {
    const h = new Params();
    await s.execPrepared(
      firsts.get(chain) === 1
        ? `INSERT INTO mnemo_audit_heads (chain, seq, hash) VALUES (${h.scalar(chain)}, ${h.scalar(head.seq)}, ${h.scalar(head.hash)})`
        : `UPDATE mnemo_audit_heads SET seq = ${h.scalar(head.seq)}, hash = ${h.scalar(head.hash)} WHERE chain = ${h.scalar(chain)}`,
      h,
    );
  }
}

/** Every record's dedup key, whatever its state. */
export async function allRecordKeys(s: Session): Promise<{ dedupKey: string; id: string }[]> {
  const rows = await s.all('SELECT dedup_key, id FROM mnemo_records');
  return rows.map((row) => ({ dedupKey: row.dedup_key as string, id: row.id as string }));
}

export async function findLiveDuplicates(
  s: Session,
  dedupKeys: readonly string[],
  now: Date,
): Promise<Map<string, { id: string; contentHash: string }>> {
  const found = new Map<string, { id: string; contentHash: string }>();
  if (dedupKeys.length === 0) return found;
  const p = new Params();
  const rows = await s.all(
    `SELECT dedup_key, id, content_hash FROM mnemo_records
     WHERE dedup_key IN (SELECT unnest(${p.strings(dedupKeys)})) AND deleted_at IS NULL
       AND (expires_at IS NULL OR expires_at > ${p.time(now)})
     ORDER BY id`,
    p,
  );
  for (const row of rows) {
    const key = row.dedup_key as string;
    if (!found.has(key))
      found.set(key, { id: row.id as string, contentHash: row.content_hash as string });
  }
  return found;
}

/**
 * A string's integer key: the top 53 bits of the lower 64 bits of its MD5,
 * equal to DuckDB's `(md5_number_lower(text) >> 11)::BIGINT` (migration 3
 * computes term keys that way, `sortFreshPostings` record keys). Rows are
 * found by key, then checked by the string itself.
 */
function md5Key(text: string): number {
  const digest = createHash('md5').update(text, 'utf8').digest();
  return digest.readUInt32LE(12) * 2 ** 21 + (digest.readUInt32LE(8) >>> 11);
}

/** A term's key (`md5Key`), memoized. Postings are found by key, then checked by term. */
export function termKey(term: string): number {
  let key = termKeys.get(term);
  if (key === undefined) {
    key = md5Key(term);
    if (termKeys.size >= MAX_MEMOIZED_TERMS) termKeys.clear();
    termKeys.set(term, key);
  }
  return key;
}

/** Terms whose key `termKey` remembers (hashing is most of the cost of writing postings). */
const MAX_MEMOIZED_TERMS = 100_000;
const termKeys = new Map<string, number>();

const bigint = (value: number | null): bigint | null => (value === null ? null : BigInt(value));
const millis = (value: Date | null): bigint | null =>
  value === null ? null : BigInt(value.getTime());

/**
 * Inserts records, postings and plan tokens through appenders (see `appendRows`):
 * three appends, whatever the number of records. The columns are in the
 * tables' declared order (migrations.ts). Returns the number of postings.
 */
export async function insertRecords(
  s: Session,
  inputs: readonly NewRecord[],
  fixed: number | null,
): Promise<number> {
  if (inputs.length === 0) return 0;
  const records = inputs.map((input) => input.record);
  const column = <T extends DuckDBValue>(type: DuckDBType, values: readonly T[]) => ({
    type,
    values,
  });
  const strings = (values: readonly (readonly string[])[]) => values.map((v) => listValue([...v]));
  await appendRows(s, 'mnemo_records', [
    column(
      VARCHAR,
      records.map((r) => r.id),
    ),
    column(
      VARCHAR,
      records.map((r) => r.agentId),
    ),
    column(
      VARCHAR,
      records.map((r) => r.orgId),
    ),
    column(
      VARCHAR,
      records.map((r) => r.content),
    ),
    column(
      VARCHAR,
      records.map((r) => r.memoryType),
    ),
    column(
      VARCHAR,
      records.map((r) => r.scope),
    ),
    column(
      DOUBLE,
      records.map((r) => r.importance),
    ),
    column(LIST(VARCHAR), strings(records.map((r) => r.tags))),
    column(
      VARCHAR,
      records.map((r) => JSON.stringify(r.metadata)),
    ),
    fixed === null
      ? column(
          LIST(FLOAT),
          records.map((r) => (r.embedding === null ? null : listValue(Array.from(r.embedding)))),
        )
      : { type: ARRAY(FLOAT, fixed), embeddings: records.map((r) => r.embedding) },
    column(
      VARCHAR,
      records.map((r) => r.contentHash),
    ),
    column(
      VARCHAR,
      inputs.map((i) => i.dedupKey),
    ),
    column(
      BOOLEAN,
      inputs.map((i) => i.isPlan),
    ),
    column(
      INTEGER,
      inputs.map((i) => i.docLength),
    ),
    column(
      LIST(VARCHAR),
      inputs.map((i) => (i.planTokens === null ? null : listValue([...i.planTokens]))),
    ),
    column(
      INTEGER,
      inputs.map((i) => i.planTokens?.length ?? null),
    ),
    column(
      VARCHAR,
      records.map((r) => r.threadId),
    ),
    column(
      VARCHAR,
      records.map((r) => r.sourceType),
    ),
    column(
      BIGINT,
      records.map((r) => millis(r.createdAt)),
    ),
    column(
      BIGINT,
      records.map((r) => millis(r.updatedAt)),
    ),
    column(
      BIGINT,
      records.map((r) => millis(r.expiresAt)),
    ),
    column(
      BIGINT,
      records.map((r) => millis(r.deletedAt)),
    ),
    column(
      BIGINT,
      records.map((r) => bigint(r.accessCount)),
    ),
    column(
      BIGINT,
      records.map((r) => millis(r.lastAccessedAt)),
    ),
    column(
      DOUBLE,
      records.map((r) => (r.embedding === null ? null : vectorNorm(r.embedding))),
    ),
  ]);
  // Only live records have postings (an imported deleted record has no terms anyway).
  const postings = inputs.flatMap(({ record: r, terms, docLength }) =>
    r.deletedAt !== null ? [] : terms.map(({ term, tf }) => ({ term, tf, r, docLength })),
  );
  await appendRows(s, 'mnemo_postings', [
    column(
      VARCHAR,
      postings.map((x) => x.r.id),
    ),
    column(
      VARCHAR,
      postings.map((x) => x.term),
    ),
    column(
      INTEGER,
      postings.map((x) => x.tf),
    ),
    column(
      BIGINT,
      postings.map((x) => BigInt(termKey(x.term))),
    ),
    column(
      VARCHAR,
      postings.map((x) => x.r.agentId),
    ),
    column(
      VARCHAR,
      postings.map((x) => x.r.orgId ?? ''),
    ),
    column(
      VARCHAR,
      postings.map((x) => x.r.scope),
    ),
    column(
      BIGINT,
      postings.map((x) => millis(x.r.expiresAt)),
    ),
    column(
      INTEGER,
      postings.map((x) => x.docLength),
    ),
  ]);
  const tokens = inputs.flatMap((input) =>
    (input.planTokens ?? []).map((token) => ({ id: input.record.id, token })),
  );
  await appendRows(s, 'mnemo_plan_tokens', [
    column(
      VARCHAR,
      tokens.map((x) => x.id),
    ),
    column(
      VARCHAR,
      tokens.map((x) => x.token),
    ),
  ]);
  return postings.length;
}

/** Above this many ids, a delete from the sorted postings compares every record id once. */
const MAX_INLINE_RECORD_KEYS = 1024;

async function deleteIndexRows(s: Session, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  // A forgotten plan is never replayed again, so its stats go with its tokens.
  for (const table of ['mnemo_postings', 'mnemo_plan_tokens', 'mnemo_plan_stats']) {
    const p = new Params();
    await s.exec(`DELETE FROM ${table} WHERE record_id IN (SELECT unnest(${p.strings(ids)}))`, p);
  }
  // The sorted postings have no record index: the ids' keys, inlined (integers computed
  // here), are checked in the scan before any id is compared.
  const p = new Params();
  const keys =
    ids.length > MAX_INLINE_RECORD_KEYS
      ? 'TRUE'
      : `record_key IN (${[...new Set(ids.map(md5Key))].join(', ')})`;
  await s.exec(
    `DELETE FROM mnemo_postings_sorted
     WHERE ${keys} AND record_id IN (SELECT unnest(${p.strings(ids)}))`,
    p,
  );
}

export async function deleteRecords(
  s: Session,
  ids: readonly string[],
  mode: 'soft' | 'hard',
  at: Date,
): Promise<void> {
  await deleteIndexRows(s, ids);
  const p = new Params();
  if (mode === 'hard') {
    const g = new Params();
    await s.exec(
      `DELETE FROM mnemo_grants WHERE record_id IN (SELECT unnest(${g.strings(ids)}))`,
      g,
    );
    await s.exec(`DELETE FROM mnemo_records WHERE id IN (SELECT unnest(${p.strings(ids)}))`, p);
    await forgetAccesses(s, ids);
  } else {
    await s.exec(
      `UPDATE mnemo_records SET deleted_at = ${p.time(at)}, updated_at = ${p.time(at)}
       WHERE id IN (SELECT unnest(${p.strings(ids)}))`,
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
  await deleteIndexRows(s, ids);
  const p = new Params();
  await s.exec(
    `UPDATE mnemo_records
     SET content = ${p.scalar(content)}, metadata = '{}', embedding = NULL, embedding_norm = NULL, doc_length = 0,
         plan_tokens = NULL, plan_token_count = NULL, deleted_at = ${p.time(at)}, updated_at = ${p.time(at)}
     WHERE id IN (SELECT unnest(${p.strings(ids)}))`,
    p,
  );
}

export async function putGrants(s: Session, grants: readonly Grant[]): Promise<void> {
  for (const grant of grants) {
    const d = new Params();
    await s.exec(
      `DELETE FROM mnemo_grants WHERE record_id = ${d.scalar(grant.recordId)}
         AND grantee_agent_id = ${d.scalar(grant.granteeAgentId)}
         AND grantee_org_id IS NOT DISTINCT FROM ${d.scalar(grant.granteeOrgId)}`,
      d,
    );
    const p = new Params();
    await s.exec(
      `INSERT INTO mnemo_grants (record_id, grantee_agent_id, grantee_org_id, level, granted_by, created_at, expires_at)
       VALUES (${p.scalar(grant.recordId)}, ${p.scalar(grant.granteeAgentId)}, ${p.scalar(grant.granteeOrgId)},
               ${p.scalar(permissionLevel(grant.permission))}, ${p.scalar(grant.grantedBy)},
               ${p.time(grant.createdAt)}, ${p.time(grant.expiresAt)})`,
      p,
    );
  }
}

/** The seq of the last journal frame committed to the file (0 before any). */
export async function journalApplied(s: Session): Promise<number> {
  const [row] = await s.all(`SELECT value FROM mnemo_settings WHERE key = 'journal_applied'`);
  return row === undefined ? 0 : Number(row.value);
}

export async function setJournalApplied(s: Session, seq: number): Promise<void> {
  const p = new Params();
  await s.execPrepared(
    `INSERT OR REPLACE INTO mnemo_settings VALUES ('journal_applied', ${p.scalar(String(seq))})`,
    p,
  );
}
