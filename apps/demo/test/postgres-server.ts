import pg from 'pg';
import { afterAll, describe } from 'vitest';

/**
 * The PostgreSQL server of the demo's PostgreSQL tests: `MNEMO_TEST_PG_URL`, a
 * superuser URL to a scratch database (`.ci/run` starts one and sets it).
 * Without it those tests are skipped, visibly, except under CI, where a
 * missing URL fails the test file that imports this module.
 */
export const PG_URL = process.env.MNEMO_TEST_PG_URL || undefined;

if (PG_URL === undefined) {
  if (process.env.CI) {
    throw new Error(
      "MNEMO_TEST_PG_URL is not set: CI must run the demo's PostgreSQL tests (see .ci/postgres.sh)",
    );
  }
  console.warn(
    '\n  apps/demo: PostgreSQL tests skipped: set MNEMO_TEST_PG_URL=postgres://user:password@127.0.0.1:port/db to run them\n',
  );
}

/** `describe` that runs only when a PostgreSQL URL is configured (a visible skip otherwise). */
export const describePostgres = PG_URL === undefined ? describe.skip : describe;

/** The configured URL; for use inside `describePostgres`. */
export function pgUrl(): string {
  if (PG_URL === undefined) throw new Error('MNEMO_TEST_PG_URL is not set');
  return PG_URL;
}

let counter = 0;
/** A schema name unique to this process and call: `<prefix>_<pid>_<n>`. */
export function uniqueSchema(prefix: string): string {
  counter += 1;
  return `${prefix}_${process.pid}_${counter}`;
}

let admin: pg.Pool | null = null;
afterAll(async () => {
  await admin?.end();
  admin = null;
});

/** A query on the test server as its superuser. */
export async function adminQuery<Row extends pg.QueryResultRow = pg.QueryResultRow>(
  sql: string,
  values?: unknown[],
): Promise<pg.QueryResult<Row>> {
  admin ??= new pg.Pool({ connectionString: pgUrl(), max: 2 });
  return admin.query<Row>(sql, values);
}

/** Drops a schema a test created (only names made by `uniqueSchema` are passed here). */
export async function dropSchema(schema: string): Promise<void> {
  await adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** Whether the schema exists, and the names of its tables. */
export async function schemaTables(schema: string): Promise<string[] | null> {
  const exists = await adminQuery('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (exists.rowCount === 0) return null;
  const { rows } = await adminQuery<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`,
    [schema],
  );
  return rows.map((row) => row.name);
}

/** The URL with its password replaced by `password`. */
export function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.href;
}
