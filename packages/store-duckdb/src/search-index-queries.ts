import type { DuckDBListValue } from '@duckdb/node-api';
import type { MemoryRecord, ScoredRecord } from '@mnemo/core';
import { eachEmbedding } from './chunks.js';
import { cosineScore } from './queries.js';
import { rowToGrant, rowToRecord } from './rows.js';
import type { Postings, SearchIndex } from './search-index.js';
import type { Session } from './session.js';
import { Params, RECORD_COLUMNS } from './sql.js';

// The loading of the in-memory `SearchIndex`, and the rows and scores of the records it finds.

const INDEXED = 'NOT r.is_plan AND r.deleted_at IS NULL';
// Both queries number the records and the terms the same way (ids and terms are unique).
const SLOTS = `SELECT r.id, (row_number() OVER (ORDER BY r.id) - 1)::INTEGER AS slot
  FROM mnemo_records r WHERE ${INDEXED}`;
const POSTINGS = `SELECT record_id, term, tf FROM mnemo_postings
  UNION ALL SELECT record_id, term, tf FROM mnemo_postings_sorted`;
const TERMS = `SELECT term, (row_number() OVER (ORDER BY term) - 1)::INTEGER AS ord
  FROM (SELECT DISTINCT term FROM (${POSTINGS}))`;

/**
 * Fills an empty `index` with every live, non-plan record, its postings
 * (fresh and sorted) and its grants. Run on the writer connection between
 * transactions, so no commit falls between the queries. Postings travel as
 * integers (term and record numbers), in no order: streaming the 1.6
 * million postings of 100,000 records as (term string, record number)
 * sorted by term took 1.2 s, as two numbers 0.5 s.
 */
export async function loadSearchIndex(s: Session, index: SearchIndex): Promise<void> {
  await s.eachChunk(
    `SELECT r.id, r.agent_id, r.org_id, r.scope, r.expires_at::DOUBLE AS expires_at, r.memory_type,
            r.importance, r.tags, r.thread_id, r.created_at::DOUBLE AS created_at, r.doc_length
     FROM mnemo_records r WHERE ${INDEXED} ORDER BY r.id`,
    (chunk) => {
      const column = <T>(index: number) => chunk.getColumnValues(index) as T[];
      const ids = column<string>(0);
      const agents = column<string>(1);
      const orgs = column<string | null>(2);
      const scopes = column<string>(3);
      const expiries = column<number | null>(4);
      const types = column<string>(5);
      const importances = column<number>(6);
      const tags = column<DuckDBListValue>(7);
      const threads = column<string | null>(8);
      const created = column<number>(9);
      const lengths = column<number>(10);
      const rows = chunk.rowCount; // a call into the driver each time it is read
      for (let i = 0; i < rows; i += 1) {
        const expires = expiries[i] as number | null;
        index.addDocument({
          id: ids[i] as string,
          agentId: agents[i] as string,
          orgId: orgs[i] as string | null,
          scope: scopes[i] as string,
          expiresAt: expires === null ? null : new Date(expires),
          memoryType: types[i] as string,
          importance: importances[i] as number,
          tags: (tags[i] as DuckDBListValue).items as string[],
          threadId: threads[i] as string | null,
          createdAt: new Date(created[i] as number),
          docLength: lengths[i] as number,
        });
      }
    },
  );
  const lists: Postings[] = [];
  await s.eachChunk(`SELECT term FROM (${TERMS}) ORDER BY ord`, (chunk) => {
    for (const term of chunk.getColumnValues(0)) lists.push(index.postingsOf(term as string));
  });
  await s.eachChunk(
    `WITH slots AS (${SLOTS}), terms AS (${TERMS})
     SELECT t.ord, s.slot, p.tf::INTEGER AS tf
     FROM (${POSTINGS}) p JOIN slots s ON s.id = p.record_id JOIN terms t ON t.term = p.term`,
    (chunk) => {
      const ords = chunk.getColumnValues(0) as number[];
      const slots = chunk.getColumnValues(1) as number[];
      const tfs = chunk.getColumnValues(2) as number[];
      const rows = chunk.rowCount;
      for (let i = 0; i < rows; i += 1) {
        (lists[ords[i] as number] as Postings).push(slots[i] as number, tfs[i] as number);
      }
    },
  );
  for (const row of await s.all(
    `SELECT g.* FROM mnemo_grants g JOIN mnemo_records r ON r.id = g.record_id WHERE ${INDEXED}`,
  )) {
    index.grant(rowToGrant(row));
  }
}

/** The rows of `ids`, whatever their state (the caller checks), by id. */
export async function recordsById(
  s: Session,
  ids: readonly string[],
): Promise<Map<string, MemoryRecord>> {
  const p = new Params();
  const rows = await s.allPrepared(
    `SELECT ${RECORD_COLUMNS} FROM mnemo_records r WHERE r.id IN (SELECT unnest(${p.strings(ids)}))`,
    p,
  );
  return new Map(rows.map((row) => [row.id as string, rowToRecord(row)]));
}

/**
 * Gives an index that holds vectors (see `SearchIndex.holdVectors`) the
 * embedding of every record it indexes. Run on the writer connection between
 * transactions, like `loadSearchIndex`.
 */
export async function loadVectors(s: Session, index: SearchIndex): Promise<void> {
  await s.eachChunk(
    `SELECT r.id, r.embedding FROM mnemo_records r WHERE ${INDEXED} AND r.embedding IS NOT NULL`,
    (chunk) => {
      const ids = chunk.getColumnValues(0) as string[];
      eachEmbedding(chunk, 1, (row, embedding) => index.putVector(ids[row] as string, embedding));
    },
  );
}

/** The best records among a vector search's candidates, and whether the candidates still stand. */
export interface ScoredCandidates {
  /** The first `limit` candidates with a score, scored and ordered as `searchVector`'s SQL has it. */
  hits: ScoredRecord[];
  /** Whether every candidate was found, live: else a forget committed since they were found. */
  intact: boolean;
}

/**
 * Scores the records among `ids` for `vector` as `searchVector`'s SQL
 * computes it, in its order (score descending, NULL last, then id), and
 * returns the rows of the first `limit`, in one statement that also checks
 * that every candidate is still there and live; only the winners' rows are
 * turned into records. (Two statements, scores then rows, each matched the
 * ids against every record's: about 2.5 ms more at 100,000 records.)
 */
export async function scoreCandidates(
  s: Session,
  ids: readonly string[],
  vector: Float32Array,
  fixed: number | null,
  limit: number,
): Promise<ScoredCandidates> {
  const p = new Params();
  const { similarity, score } = cosineScore(p.floats(vector), fixed);
  const rows = await s.allPrepared(
    `SELECT ${RECORD_COLUMNS}, r.score, r.found, r.all_live FROM (
       SELECT *, ${score} AS score, count(*) OVER () AS found,
              bool_and(deleted_at IS NULL) OVER () AS all_live
       FROM (
         SELECT r.*, ${similarity} AS similarity
         FROM mnemo_records r WHERE r.id IN (SELECT unnest(${p.strings(ids)}))
       )
     ) r
     ORDER BY r.score DESC NULLS LAST, r.id ASC
     LIMIT ${p.scalar(limit)}`,
    p,
  );
  const [first] = rows;
  return {
    hits: rows
      .filter((row) => row.score !== null)
      .map((row) => ({ record: rowToRecord(row), score: Number(row.score) })),
    intact: first !== undefined && Number(first.found) === ids.length && first.all_live === true,
  };
}
