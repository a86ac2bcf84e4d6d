import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  ARRAY,
  arrayValue,
  type DuckDBConnection,
  DuckDBInstance,
  FLOAT,
  INTEGER,
  VARCHAR,
} from '@duckdb/node-api';
import type pg from 'pg';
import { type StoreTarget, uniqueName, withPgClient } from '../shared/stores.js';

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
  const folder = await mkdtemp(join(tmpdir(), 'mnemo-bench-raw-'));
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
    await rm(folder, { recursive: true, force: true });
  }
}

const DIMENSIONS = 384;

async function duckCount(connection: DuckDBConnection): Promise<number> {
  const result = await connection.run('SELECT count(*) AS n FROM raw_records');
  return Number((await result.getRowsJS())[0]?.[0]);
}

function expectRows(mode: string, actual: number, expected: number): void {
  if (actual !== expected) {
    throw new Error(`raw ${mode}: the table holds ${actual} rows, expected ${expected}`);
  }
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
    for (let i = 0; i < seqRows; i += 1) {
      await connection.run('BEGIN');
      insert.bind(
        [i, rows.texts[i] as string, arrayValue(Array.from(rows.vectors[i] as Float32Array))],
        [INTEGER, VARCHAR, vectorType],
      );
      await insert.run();
      await connection.run('COMMIT');
    }
    const ms = performance.now() - t0;
    expectRows('sequential', await duckCount(connection), seqRows);
    return ms;
  });
  progress(`[raw duckdb] ${seqRows} one-row transactions in ${sequentialMs.toFixed(0)} ms`);
  const batchMs = await withDuckDB(async (connection) => {
    const t0 = performance.now();
    const appender = await connection.createAppender('raw_records');
    for (let i = 0; i < n; i += 1) {
      appender.appendInteger(i);
      appender.appendVarchar(rows.texts[i] as string);
      appender.appendArray(Array.from(rows.vectors[i] as Float32Array), vectorType);
      appender.endRow();
      if ((i + 1) % RAW_CHUNK === 0) appender.flushSync();
    }
    appender.closeSync(); // flushes the rest
    const ms = performance.now() - t0;
    expectRows('batch', await duckCount(connection), n);
    return ms;
  });
  progress(`[raw duckdb] ${n} rows through the Appender in ${batchMs.toFixed(0)} ms`);
  return {
    sequentialRows: seqRows,
    sequentialMs,
    batchRows: n,
    batchMs,
    batchMethod: `DuckDB Appender (@duckdb/node-api), flushSync every ${RAW_CHUNK} rows, autocommit`,
    vectorType: `FLOAT[${DIMENSIONS}]`,
  };
}

async function withPgTable<T>(url: string, fn: (client: pg.Client, table: string) => Promise<T>) {
  const schema = uniqueName('mnemo_bench_raw');
  return withPgClient(url, async (client) => {
    await client.query(`CREATE SCHEMA "${schema}"`);
    try {
      const table = `"${schema}".raw_records`;
      await client.query(`CREATE TABLE ${table} (id integer, content text, embedding real[])`);
      return await fn(client, table);
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
}

async function pgCount(client: pg.Client, table: string): Promise<number> {
  const result = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(result.rows[0]?.n);
}

function pgArrayLiteral(vector: Float32Array): string {
  return `{${Array.from(vector).join(',')}}`;
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
    for (let i = 0; i < seqRows; i += 1) {
      await client.query('BEGIN');
      await client.query({
        name: 'raw-insert-one',
        text: `INSERT INTO ${table} (id, content, embedding) VALUES ($1, $2, $3)`,
        values: [i, rows.texts[i], Array.from(rows.vectors[i] as Float32Array)],
      });
      await client.query('COMMIT');
    }
    const ms = performance.now() - t0;
    expectRows('sequential', await pgCount(client, table), seqRows);
    return ms;
  });
  progress(`[raw postgres] ${seqRows} one-row transactions in ${sequentialMs.toFixed(0)} ms`);
  const batchMs = await withPgTable(url, async (client, table) => {
    const t0 = performance.now();
    for (let start = 0; start < n; start += RAW_CHUNK) {
      const end = Math.min(n, start + RAW_CHUNK);
      const ids: number[] = [];
      const vectors: string[] = [];
      for (let i = start; i < end; i += 1) {
        ids.push(i);
        vectors.push(pgArrayLiteral(rows.vectors[i] as Float32Array));
      }
      await client.query(
        `INSERT INTO ${table} (id, content, embedding)
         SELECT i, c, e::real[] FROM unnest($1::int[], $2::text[], $3::text[]) AS u(i, c, e)`,
        [ids, rows.texts.slice(start, end), vectors],
      );
    }
    const ms = performance.now() - t0;
    expectRows('batch', await pgCount(client, table), n);
    return ms;
  });
  progress(`[raw postgres] ${n} rows by INSERT … SELECT unnest in ${batchMs.toFixed(0)} ms`);
  return {
    sequentialRows: seqRows,
    sequentialMs,
    batchRows: n,
    batchMs,
    batchMethod: `INSERT … SELECT FROM unnest($1::int[], $2::text[], $3::text[]) in chunks of ${RAW_CHUNK}, one autocommit statement each`,
    vectorType: 'real[]',
  };
}
