import { MnemoError } from '@mnemo/core';
import pg from 'pg';
import { errorMessage } from './error-message.js';
import { UsageError } from './usage-error.js';

/** As `@mnemo/store-postgres` does for its own pool: give up on a server that does not answer. */
const CONNECT_TIMEOUT_MS = 5_000;
const STATEMENT_TIMEOUT_MS = 30_000;

/**
 * Makes room for a fresh run in `schema`: drops it (with everything in it) and
 * creates it again, empty, in one transaction. Only that schema is touched,
 * and only when it is absent, empty, or holds nothing but mnemo's tables,
 * indexes and functions (all named `mnemo_…`): anything else, or the `public`
 * schema, is refused with a `UsageError`, so a mistyped `--pg-schema` cannot
 * destroy someone's data. A server that cannot be reached or refuses the
 * login is a `MnemoError` with code `STORE_UNAVAILABLE`.
 *
 * `schema` must already be validated (`pgSchema`): it is quoted into the SQL.
 */
export async function resetPostgresSchema(url: string, schema: string): Promise<void> {
  if (schema === 'public') {
    throw new UsageError(
      '--pg-schema: refusing to drop the schema public; name a schema of its own, or use --keep',
    );
  }
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS + 5_000,
    application_name: 'mnemo-demo',
  });
  // A connection lost while idle is reported by the next query; it must not crash the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new MnemoError('STORE_UNAVAILABLE', `connecting failed: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  try {
    const foreign = await foreignObjects(client, schema);
    if (foreign.length > 0) {
      throw new UsageError(
        `--pg-schema: the schema ${schema} holds objects that are not mnemo's (${foreign.join(', ')}); refusing to drop it`,
      );
    }
    await client.query('BEGIN');
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (error instanceof UsageError) throw error;
    throw new Error(`PostgreSQL: cannot reset the schema ${schema}: ${errorMessage(error)}`, {
      cause: error,
    });
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Up to three objects in `schema` that mnemo did not create: `table notes`, `function f`, … */
async function foreignObjects(client: pg.Client, schema: string): Promise<string[]> {
  const { rows } = await client.query<{ kind: string; name: string }>(
    `SELECT kind, name FROM (
       SELECT CASE c.relkind WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'
                             WHEN 'm' THEN 'view' ELSE 'table' END AS kind, c.relname AS name
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
       UNION ALL
       SELECT 'function', p.proname
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
       UNION ALL
       SELECT 'type', t.typname
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = $1 AND t.typrelid = 0 AND t.typcategory <> 'A'
     ) AS objects
     WHERE name NOT LIKE 'mnemo\\_%'
     ORDER BY kind, name
     LIMIT 3`,
    [schema],
  );
  return rows.map((row) => `${row.kind} ${row.name}`);
}
