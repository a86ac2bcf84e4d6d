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
 * Takes a file back to how schema version 6 left it: no embedding norms. (DuckDB drops no
 * column of a table with an index, so the index goes and comes back.)
 */
export const BEFORE_EMBEDDING_NORMS: readonly string[] = [
  'DROP INDEX mnemo_records_dedup_key',
  'ALTER TABLE mnemo_records DROP COLUMN embedding_norm',
  'CREATE INDEX mnemo_records_dedup_key ON mnemo_records (dedup_key)',
  'DELETE FROM mnemo_migrations WHERE version = 7',
];
