import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MemoryStore } from '@mnemo/core';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { createPostgresStore } from '@mnemo/store-postgres';
import type pg from 'pg';
import { withPgClient } from '../shared/stores.js';

/** Where a run keeps its records: a fresh DuckDB (temp file or `:memory:`) or a fresh PostgreSQL schema. */
export type StoreChoice = { kind: 'duckdb'; inMemory: boolean } | { kind: 'postgres'; url: string };

/** A store made for one run, and how to get rid of it. */
export interface RunStore {
  store: MemoryStore;
  /** For the JSON: `:memory:`, `temp file`, or the schema name. */
  location: string;
  /** Facts gathered before `dispose` (PostgreSQL: server version, embedding column type). */
  describe(): Promise<Record<string, string>>;
  /** Deletes the temp file or drops the schema. Call after the engine is closed. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Creates a fresh store. DuckDB: `:memory:`, or a file in a new temp folder
 * that `dispose` deletes. PostgreSQL: a new schema `mnemo_bench_<random>`
 * (created by the store's `init`) that `dispose` drops with a `pg` client of
 * its own; with pgvector on the server, embeddings go to a `vector(n)` column
 * when `dimensions` > 0.
 */
export async function createRunStore(choice: StoreChoice, dimensions: number): Promise<RunStore> {
  if (choice.kind === 'duckdb') {
    if (choice.inMemory) {
      return {
        store: createDuckDBStore({ path: ':memory:' }),
        location: ':memory:',
        describe: async () => ({}),
        dispose: async () => undefined,
      };
    }
    const folder = await mkdtemp(join(tmpdir(), 'mnemo-bench-'));
    return {
      store: createDuckDBStore({ path: join(folder, 'recall.duckdb') }),
      location: 'temp file',
      describe: async () => ({}),
      dispose: () => rm(folder, { recursive: true, force: true }),
    };
  }
  const schema = `mnemo_bench_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  let disposed = false;
  return {
    store: createPostgresStore({
      connectionString: choice.url,
      schema,
      ...(dimensions > 0 ? { vectorDimensions: dimensions } : {}),
    }),
    location: `schema ${schema}`,
    describe: () => withPgClient(choice.url, (client) => describePostgres(client, schema)),
    dispose: async () => {
      if (disposed) return;
      disposed = true;
      await withPgClient(choice.url, (client) =>
        client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
      );
    },
  };
}

async function describePostgres(
  client: pg.Client,
  schema: string,
): Promise<Record<string, string>> {
  const server = await client.query<{ version: string }>(
    "SELECT current_setting('server_version') AS version",
  );
  const column = await client.query<{ type: string }>(
    `SELECT format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = 'mnemo_records' AND a.attname = 'embedding'`,
    [schema],
  );
  return {
    serverVersion: server.rows[0]?.version ?? 'unknown',
    embeddingColumn: column.rows[0]?.type ?? 'unknown',
  };
}
