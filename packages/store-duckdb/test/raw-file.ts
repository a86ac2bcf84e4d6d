import { DuckDBInstance } from '@duckdb/node-api';

/**
 * Rows of `sql` on the closed file at `path`, read with a plain DuckDB
 * instance (DuckDB's default settings), BIGINTs as numbers.
 */
export async function queryFile<T = Record<string, unknown>>(
  path: string,
  sql: string,
): Promise<T[]> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    const rows = (await connection.runAndReadAll(sql)).getRowObjectsJS();
    return JSON.parse(
      JSON.stringify(rows, (_key, value) => (typeof value === 'bigint' ? Number(value) : value)),
    ) as T[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Runs `statements` on the file at `path` with a plain DuckDB connection (the file must not be held). */
export async function runOnFile(path: string, statements: readonly string[]): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  try {
    for (const sql of statements) await connection.run(sql);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/**
 * Takes a file back to how schema version 8 left it: no access log, the accesses it held
 * added to the records' counts as version 8 kept them.
 */
export const BEFORE_ACCESS_LOG: readonly string[] = [
  `UPDATE mnemo_records r
   SET access_count = r.access_count + a.n, last_accessed_at = a.last_at
   FROM (SELECT record_id, count(*) AS n, arg_max(accessed_at, touch) AS last_at
         FROM mnemo_accesses GROUP BY record_id) a
   WHERE r.id = a.record_id`,
  'DROP TABLE mnemo_accesses',
  'DELETE FROM mnemo_migrations WHERE version = 9',
];

/**
 * Takes a file back to how schema version 7 left it: audit record ids as a VARCHAR[] list
 * (and version 9's change undone). DuckDB alters no table with a primary key, so the table
 * is rebuilt.
 */
export const BEFORE_AUDIT_IDS_AS_TEXT: readonly string[] = [
  ...BEFORE_ACCESS_LOG,
  `CREATE TABLE mnemo_audit_events_v7 (
    chain VARCHAR NOT NULL,
    seq BIGINT NOT NULL,
    id VARCHAR NOT NULL,
    occurred_at BIGINT NOT NULL,
    principal VARCHAR NOT NULL,
    op VARCHAR NOT NULL,
    record_ids VARCHAR[] NOT NULL,
    details VARCHAR NOT NULL,
    prev_hash VARCHAR NOT NULL,
    hash VARCHAR NOT NULL,
    PRIMARY KEY (chain, seq)
  )`,
  `INSERT INTO mnemo_audit_events_v7
     SELECT * REPLACE (from_json(record_ids, '["VARCHAR"]') AS record_ids) FROM mnemo_audit_events`,
  'DROP TABLE mnemo_audit_events',
  'ALTER TABLE mnemo_audit_events_v7 RENAME TO mnemo_audit_events',
  'DELETE FROM mnemo_migrations WHERE version = 8',
];

/**
 * Takes a file back to how schema version 6 left it: no embedding norms (and the changes
 * of versions 8 and 9 undone). DuckDB drops no column of a table with an index, so the index goes and
 * comes back.
 */
export const BEFORE_EMBEDDING_NORMS: readonly string[] = [
  ...BEFORE_AUDIT_IDS_AS_TEXT,
  'DROP INDEX mnemo_records_dedup_key',
  'ALTER TABLE mnemo_records DROP COLUMN embedding_norm',
  'CREATE INDEX mnemo_records_dedup_key ON mnemo_records (dedup_key)',
  'DELETE FROM mnemo_migrations WHERE version = 7',
];
