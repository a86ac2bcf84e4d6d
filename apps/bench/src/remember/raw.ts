import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  ARRAY,
  arrayValue,
  type DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  FLOAT,
  INTEGER,
  VARCHAR,
} from '@duckdb/node-api';
import duckdb from '@duckdb/node-bindings';
import type pg from 'pg';
import { onSignals, type StoreTarget, uniqueName, withPgClient } from '../shared/stores.js';

/**
 * The raw-driver baselines: the same texts and vectors written to a plain
 * table `(id INTEGER, content, embedding <384 floats>)` with no hashing,
 * deduplication, postings, audit or id generation. Vectors are computed before
 * the clock starts (the mnemo modes embed inside their timing).
 */
export interface RawRows {
  texts: readonly string[];
  vectors: readonly Float32Array[];
}

/**
 * How the one-row mode writes: a prepared INSERT outside any explicit
 * transaction, so that each one is a transaction of its own, committed
 * durably before the next is sent. `BEGIN`, `INSERT`, `COMMIT` commit the
 * same row with two more calls into the driver (two more round trips to
 * PostgreSQL), and ran at about 0.6 times the rate on both drivers on
 * 2026-12-04 (PostgreSQL 1,650–1,933/s against 2,761–3,156; DuckDB 408–654
 * against 935–951).
 */
export const ONE_ROW_TRANSACTION = 'a prepared INSERT per row, each committing on its own';

export interface RawFigures {
  /** Rows written and timed in the one-row-transaction mode. */
  sequentialRows: number;
  sequentialMs: number;
  batchRows: number;
  batchMs: number;
  /** How the bulk path wrote. */
  batchMethod: string;
  /** The vector column's type. */
  vectorType: string;
}

/** Rows per bulk chunk. */
export const RAW_CHUNK = 1000;

/**
 * Runs both raw modes on `target`, each in a fresh table (DuckDB: a new temp
 * file each; PostgreSQL: a new schema, dropped afterwards). `sequentialLimit`
 * caps the rows of the one-at-a-time mode. Checks that each table holds
 * exactly the rows written.
 */
export async function runRawBaselines(
  target: StoreTarget,
  rows: RawRows,
  sequentialLimit: number,
  progress: (line: string) => void,
): Promise<RawFigures> {
  return target.kind === 'duckdb'
    ? rawDuckDB(rows, sequentialLimit, progress)
    : rawPostgres(target.url, rows, sequentialLimit, progress);
}

async function withDuckDB<T>(fn: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
  const created = mkdtemp(join(tmpdir(), 'mnemo-bench-raw-'));
  // Ctrl-C must not leave the folder behind. The file stays open (closing a
  // connection under a running statement is not safe); the process exits next.
  const stopOnSignal = onSignals(async () => {
    const path = await created.catch(() => undefined);
    if (path !== undefined) await rm(path, { recursive: true, force: true, maxRetries: 3 });
  });
  let folder: string;
  try {
    folder = await created;
  } catch (error) {
    stopOnSignal();
    throw error;
  }
  try {
    const instance = await DuckDBInstance.create(join(folder, 'raw.duckdb'));
    const connection = await instance.connect();
    try {
      await connection.run(
        `CREATE TABLE raw_records (id INTEGER, content VARCHAR, embedding FLOAT[${DIMENSIONS}])`,
      );
      return await fn(connection);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  } finally {
    // The handler stays until the folder is gone: Ctrl-C while it is removed still removes it.
    try {
      await rm(folder, { recursive: true, force: true });
    } finally {
      stopOnSignal();
    }
  }
}

const DIMENSIONS = 384;

/** What a raw table holds: its row count, and a few of its rows read back. */
export interface Stored {
  count: number;
  rows: { id: number; content: string; embedding: readonly number[] }[];
}

async function duckStored(connection: DuckDBConnection, ids: number[]): Promise<Stored> {
  const count = await connection.run('SELECT count(*) AS n FROM raw_records');
  const rows = await connection.run(
    `SELECT id, content, embedding FROM raw_records WHERE id IN (${ids.join(', ')}) ORDER BY id`,
  );
  return {
    count: Number((await count.getRowsJS())[0]?.[0]),
    rows: (await rows.getRowObjectsJS()).map((row) => ({
      id: Number(row.id),
      content: String(row.content),
      embedding: row.embedding as number[],
    })),
  };
}

/** The first, middle and last of the rows 0..count-1. */
export function sampleIds(count: number): number[] {
  return [...new Set([0, Math.floor(count / 2), count - 1])];
}

/**
 * Checks that a raw table holds exactly `count` rows and that the sampled
 * ones hold their text and every float of their vector, so that a faster
 * way of writing cannot pass by writing something else.
 */
export function expectRows(mode: string, stored: Stored, rows: RawRows, count: number): void {
  if (stored.count !== count) {
    throw new Error(`raw ${mode}: the table holds ${stored.count} rows, expected ${count}`);
  }
  const ids = sampleIds(count);
  const same = (row: Stored['rows'][number], id: number) => {
    const vector = rows.vectors[id] as Float32Array;
    return (
      row.id === id &&
      row.content === rows.texts[id] &&
      row.embedding.length === vector.length &&
      // PostgreSQL prints a real in the fewest digits that read back as the same float.
      row.embedding.every((value, index) => Math.fround(value) === vector[index])
    );
  };
  if (
    stored.rows.length !== ids.length ||
    !stored.rows.every((row, i) => same(row, ids[i] as number))
  ) {
    throw new Error(
      `raw ${mode}: rows ${ids.join(', ')} do not hold the texts and vectors written`,
    );
  }
}

/**
 * Fills column `column` of a chunk, a `FLOAT[n]` array, with `vectors`: their
 * floats laid end to end and copied into the chunk's child vector at once.
 * The client's `setItem` takes a `DuckDBArrayValue` and writes it a float at a
 * time, and the Appender's `appendArray` per row is slower still: on
 * 2026-12-04, about 1,400 rows/s by `appendArray`, 28,000 by `setItem` and
 * 43,000 this way. The baseline must be the driver's fastest path, which is
 * the one mnemo's own writes take.
 */
function copyVectors(chunk: DuckDBDataChunk, column: number, vectors: readonly Float32Array[]) {
  const floats = new Float32Array(vectors.length * DIMENSIONS);
  vectors.forEach((vector, row) => {
    floats.set(vector, row * DIMENSIONS);
  });
  const child = duckdb.array_vector_get_child(duckdb.data_chunk_get_vector(chunk.chunk, column));
  duckdb.copy_data_to_vector(child, 0, floats.buffer, 0, floats.byteLength);
}

async function rawDuckDB(
  rows: RawRows,
  sequentialLimit: number,
  progress: (line: string) => void,
): Promise<RawFigures> {
  const n = rows.texts.length;
  const seqRows = Math.min(n, sequentialLimit);
  const vectorType = ARRAY(FLOAT, DIMENSIONS);
  const sequentialMs = await withDuckDB(async (connection) => {
    const insert = await connection.prepare('INSERT INTO raw_records VALUES ($1, $2, $3)');
    const t0 = performance.now();
    // Each INSERT commits on its own (see ONE_ROW_TRANSACTION).
    for (let i = 0; i < seqRows; i += 1) {
      insert.bind(
        [i, rows.texts[i] as string, arrayValue(Array.from(rows.vectors[i] as Float32Array))],
        [INTEGER, VARCHAR, vectorType],
      );
      await insert.run();
    }
    const ms = performance.now() - t0;
    expectRows('sequential', await duckStored(connection, sampleIds(seqRows)), rows, seqRows);
    return ms;
  });
  progress(`[raw duckdb] ${seqRows} one-row transactions in ${sequentialMs.toFixed(0)} ms`);
  const batchMs = await withDuckDB(async (connection) => {
    const t0 = performance.now();
    const appender = await connection.createAppender('raw_records');
    for (let start = 0; start < n; start += RAW_CHUNK) {
      const count = Math.min(RAW_CHUNK, n - start);
      const chunk = DuckDBDataChunk.create([INTEGER, VARCHAR, vectorType], count);
      const ids = chunk.getColumnVector(0);
      const texts = chunk.getColumnVector(1);
      for (let row = 0; row < count; row += 1) {
        ids.setItem(row, start + row);
        texts.setItem(row, rows.texts[start + row] as string);
      }
      ids.flush();
      texts.flush();
      copyVectors(chunk, 2, rows.vectors.slice(start, start + count));
      appender.appendDataChunk(chunk);
      appender.flushSync();
    }
    appender.closeSync();
    const ms = performance.now() - t0;
    expectRows('batch', await duckStored(connection, sampleIds(n)), rows, n);
    return ms;
  });
  progress(`[raw duckdb] ${n} rows through the Appender in ${batchMs.toFixed(0)} ms`);
  return {
    sequentialRows: seqRows,
    sequentialMs,
    batchRows: n,
    batchMs,
    batchMethod: `DuckDB Appender (@duckdb/node-api), one data chunk of ${RAW_CHUNK} rows per flushSync (autocommit), vectors copied into the chunk at once`,
    vectorType: `FLOAT[${DIMENSIONS}]`,
  };
}

async function withPgTable<T>(url: string, fn: (client: pg.Client, table: string) => Promise<T>) {
  const schema = uniqueName('mnemo_bench_raw');
  return withPgClient(url, async (client) => {
    const created = client.query(`CREATE SCHEMA "${schema}"`);
    // Ctrl-C must not leave the schema behind: drop it on a connection of its own, as
    // this one is busy with the statement under way (the drop waits for it).
    const stopOnSignal = onSignals(async () => {
      await created.catch(() => undefined);
      await withPgClient(url, (other) =>
        other.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
      ).catch(() => undefined);
    });
    try {
      await created;
    } catch (error) {
      stopOnSignal();
      throw error;
    }
    try {
      const table = `"${schema}".raw_records`;
      await client.query(`CREATE TABLE ${table} (id integer, content text, embedding real[])`);
      return await fn(client, table);
    } finally {
      // The handler stays until the schema is dropped: Ctrl-C during the drop still drops it.
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        stopOnSignal();
      }
    }
  });
}

async function pgStored(client: pg.Client, table: string, ids: number[]): Promise<Stored> {
  const count = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  const rows = await client.query<Stored['rows'][number]>(
    `SELECT id, content, embedding FROM ${table} WHERE id = ANY($1::int[]) ORDER BY id`,
    [ids],
  );
  return { count: Number(count.rows[0]?.n), rows: rows.rows };
}

/** The type OID of `real` (float4), as PostgreSQL's binary array format names element types. */
const FLOAT4_OID = 700;

/**
 * The floats of `vectors`, end to end, as one one-dimensional `real[]` in
 * PostgreSQL's binary format: `pg` sends a Buffer parameter as is, and neither
 * side converts a float to or from decimal text (a text `real[]` literal made
 * the bulk baseline about half as fast on 2026-12-04).
 */
function binaryReals(vectors: readonly Float32Array[]): Buffer {
  const total = vectors.reduce((sum, vector) => sum + vector.length, 0);
  // Header: one dimension, no NULLs, the element type, then the dimension's size and lower bound.
  const array = Buffer.allocUnsafe(20 + total * 8);
  array.writeInt32BE(1, 0);
  array.writeInt32BE(0, 4);
  array.writeInt32BE(FLOAT4_OID, 8);
  array.writeInt32BE(total, 12);
  array.writeInt32BE(1, 16);
  let offset = 20;
  for (const vector of vectors) {
    for (const value of vector) {
      array.writeInt32BE(4, offset);
      array.writeFloatBE(value, offset + 4);
      offset += 8;
    }
  }
  return array;
}

async function rawPostgres(
  url: string,
  rows: RawRows,
  sequentialLimit: number,
  progress: (line: string) => void,
): Promise<RawFigures> {
  const n = rows.texts.length;
  const seqRows = Math.min(n, sequentialLimit);
  const sequentialMs = await withPgTable(url, async (client, table) => {
    const t0 = performance.now();
    // Each INSERT commits on its own (see ONE_ROW_TRANSACTION).
    for (let i = 0; i < seqRows; i += 1) {
      await client.query({
        name: 'raw-insert-one',
        text: `INSERT INTO ${table} (id, content, embedding) VALUES ($1, $2, $3::real[])`,
        values: [i, rows.texts[i], binaryReals([rows.vectors[i] as Float32Array])],
      });
    }
    const ms = performance.now() - t0;
    expectRows('sequential', await pgStored(client, table, sampleIds(seqRows)), rows, seqRows);
    return ms;
  });
  progress(`[raw postgres] ${seqRows} one-row transactions in ${sequentialMs.toFixed(0)} ms`);
  const batchMs = await withPgTable(url, async (client, table) => {
    const t0 = performance.now();
    for (let start = 0; start < n; start += RAW_CHUNK) {
      const end = Math.min(n, start + RAW_CHUNK);
      const ids = Array.from({ length: end - start }, (_, index) => start + index);
      // Row o of the chunk slices its vector out of the one packed array.
      await client.query(
        `INSERT INTO ${table} (id, content, embedding)
         SELECT i, c, ($3::real[])[(o - 1) * ${DIMENSIONS} + 1 : o * ${DIMENSIONS}]
         FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS u(i, c, o)`,
        [ids, rows.texts.slice(start, end), binaryReals(rows.vectors.slice(start, end))],
      );
    }
    const ms = performance.now() - t0;
    expectRows('batch', await pgStored(client, table, sampleIds(n)), rows, n);
    return ms;
  });
  progress(`[raw postgres] ${n} rows by INSERT … SELECT unnest in ${batchMs.toFixed(0)} ms`);
  return {
    sequentialRows: seqRows,
    sequentialMs,
    batchRows: n,
    batchMs,
    batchMethod: `INSERT … SELECT FROM unnest($1::int[], $2::text[]) WITH ORDINALITY, each row's vector sliced out of one binary real[] ($3), in chunks of ${RAW_CHUNK}, one autocommit statement each`,
    vectorType: 'real[]',
  };
}
