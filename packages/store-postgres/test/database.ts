import pg from 'pg';
import { afterAll, describe } from 'vitest';

/**
 * The PostgreSQL server the tests run against: `MNEMO_TEST_PG_URL` (`.ci/run`
 * starts one and sets it). Without it the PostgreSQL tests are skipped with a
 * message, except under CI, where a missing server fails the run.
 */
export const PG_URL = process.env.MNEMO_TEST_PG_URL;
/** A database whose server has pgvector (`MNEMO_TEST_PGVECTOR_URL`), when there is one. */
export const PGVECTOR_URL = process.env.MNEMO_TEST_PGVECTOR_URL;

if (PG_URL === undefined) {
  if (process.env.CI)
    throw new Error('MNEMO_TEST_PG_URL is not set: CI must start PostgreSQL (see .ci/postgres.sh)');
  console.warn(
    '\n  PostgreSQL tests skipped: set MNEMO_TEST_PG_URL=postgres://user:password@127.0.0.1:port/db to run them\n',
  );
}

/** `describe` that runs only when a PostgreSQL URL is configured. */
export const describePostgres = PG_URL === undefined ? describe.skip : describe;

let counter = 0;
/** A schema name unique to this process and call, so parallel test files never collide. */
export function uniqueSchema(prefix: string): string {
  counter += 1;
  return `${prefix}_${process.pid}_${counter}`;
}

const admin = PG_URL === undefined ? null : new pg.Pool({ connectionString: PG_URL, max: 2 });
afterAll(async () => {
  await admin?.end();
});

/** Drops a test schema, in the database of `url` (default: `MNEMO_TEST_PG_URL`'s). */
export async function dropSchema(schema: string, url = PG_URL): Promise<void> {
  if (url === PG_URL) await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  else await queryOn(url as string, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** One query on a fresh connection to `url`. */
export async function queryOn(
  url: string,
  sql: string,
  values?: unknown[],
): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

export async function adminQuery(sql: string, values?: unknown[]): Promise<pg.QueryResult> {
  if (admin === null) throw new Error('no PostgreSQL configured');
  return admin.query(sql, values);
}
