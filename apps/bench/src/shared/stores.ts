import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MemoryStore } from '@mnemo/core';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { createPostgresStore } from '@mnemo/store-postgres';
import pg from 'pg';
import { type FlagValues, oneOf, stringFlag } from './args.js';
import { errorMessage, UsageError } from './errors.js';

/** Where a PostgreSQL store searches from: its `lexicalIndex` and `vectorIndex` options. */
export type SearchIndex = 'memory' | 'sql';

/**
 * `--store duckdb` (a temp file) or `--store postgres --pg-url <url>` (a new
 * schema), with the search indexes a command lets one choose (see
 * `withSearchIndexes`; the store's defaults when not).
 */
export type StoreTarget =
  | { kind: 'duckdb' }
  | { kind: 'postgres'; url: string; lexicalIndex?: SearchIndex; vectorIndex?: SearchIndex };

/** Reads `--store` and `--pg-url` (see `recall`'s rules); throws `UsageError`. */
export function parseStoreTarget(values: FlagValues): StoreTarget {
  const kind = oneOf('--store', stringFlag(values, 'store'), ['duckdb', 'postgres'], 'duckdb');
  const url = stringFlag(values, 'pg-url');
  if (kind === 'duckdb') {
    if (url !== undefined) throw new UsageError('--pg-url applies to --store postgres only');
    return { kind };
  }
  if (url === undefined) throw new UsageError('--store postgres needs --pg-url <url>');
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    // reported below
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new UsageError(
      '--pg-url must be a postgres:// or postgresql:// URL, e.g. postgres://user:pw@127.0.0.1:5432/db',
    );
  }
  return { kind, url };
}

/**
 * `target` with `--lexical-index` and `--vector-index` (`memory`, the
 * default, or `sql`), which apply to `--store postgres` only; throws
 * `UsageError`.
 */
export function withSearchIndexes(values: FlagValues, target: StoreTarget): StoreTarget {
  const flags = ['lexical-index', 'vector-index'] as const;
  if (target.kind === 'duckdb') {
    const given = flags.find((flag) => stringFlag(values, flag) !== undefined);
    if (given !== undefined) throw new UsageError(`--${given} applies to --store postgres only`);
    return target;
  }
  const [lexicalIndex, vectorIndex] = flags.map((flag) =>
    oneOf<SearchIndex>(`--${flag}`, stringFlag(values, flag), ['memory', 'sql'], 'memory'),
  );
  return { ...target, lexicalIndex, vectorIndex };
}

/** `text` with the PostgreSQL password of `target` (if any) masked. */
export function redactPassword(text: string, target: StoreTarget | undefined): string {
  if (target?.kind !== 'postgres') return text;
  let password = '';
  try {
    password = decodeURIComponent(new URL(target.url).password);
  } catch {
    return text;
  }
  return password === '' ? text : text.split(password).join('***');
}

/** A unique name for a benchmark's schema or file: `mnemo_bench_<time>_<random>`. */
export function uniqueName(prefix = 'mnemo_bench'): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** A fresh mnemo store for one measurement, and how to remove it. */
export interface FreshStore {
  store: MemoryStore;
  /** `temp file` or `schema <name>`. */
  location: string;
  /** Deletes the temp folder or drops the schema. Call after the engine is closed. Idempotent. */
  dispose(): Promise<void>;
  /**
   * Brings a freshly loaded store to its steady state before timing reads:
   * on PostgreSQL `VACUUM ANALYZE` of the schema's tables (what autovacuum does
   * a while after a bulk load, so the timings neither race it nor run on the
   * planner statistics of an empty table); nothing on DuckDB.
   */
  settle(): Promise<void>;
  /**
   * Another store on the same file or schema, as a process opens it after a
   * restart; on PostgreSQL its `init()` loads the caches it searches from
   * (`preloadSearchIndex`), which it would otherwise load in the background
   * while searches answer in SQL.
   */
  reopen(): MemoryStore;
}

/**
 * A fresh mnemo store with embeddings of `dimensions` in a fixed-size column:
 * DuckDB `FLOAT[n]` in a file of a new temp folder; PostgreSQL a new schema
 * (`vector(n)` when the server has pgvector, else `real[]`). Without
 * `dimensions`, the stores' default (no fixed-size column).
 */
export async function createFreshStore(
  target: StoreTarget,
  dimensions?: number,
): Promise<FreshStore> {
  const vector = dimensions === undefined ? {} : { vectorDimensions: dimensions };
  if (target.kind === 'duckdb') {
    const folder = await mkdtemp(join(tmpdir(), 'mnemo-bench-'));
    const open = () => createDuckDBStore({ path: join(folder, 'bench.duckdb'), ...vector });
    return {
      store: open(),
      reopen: open,
      location: 'temp file',
      dispose: () => rm(folder, { recursive: true, force: true }),
      settle: async () => undefined,
    };
  }
  const schema = uniqueName();
  let disposed = false;
  const { url, lexicalIndex, vectorIndex } = target;
  const open = (preloadSearchIndex: boolean) =>
    createPostgresStore({
      connectionString: url,
      schema,
      ...vector,
      ...(lexicalIndex && { lexicalIndex }),
      ...(vectorIndex && { vectorIndex }),
      preloadSearchIndex,
    });
  return {
    store: open(false),
    reopen: () => open(true),
    location: `schema ${schema}`,
    settle: () =>
      withPgClient(target.url, async (client) => {
        const tables = await client.query<{ name: string }>(
          'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1',
          [schema],
        );
        for (const { name } of tables.rows)
          await client.query(`VACUUM ANALYZE "${schema}"."${name}"`);
      }),
    dispose: async () => {
      if (disposed) return;
      disposed = true;
      await withPgClient(target.url, (client) =>
        client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
      );
    },
  };
}

/** Counts the records of `store` (all agents, through `scanRecords`). */
export async function countRecords(store: MemoryStore): Promise<number> {
  let count = 0;
  let afterId: string | undefined;
  for (;;) {
    const page = await store.scanRecords({
      ...(afterId === undefined ? {} : { afterId }),
      limit: 5000,
    });
    count += page.length;
    if (page.length < 5000) return count;
    afterId = page[page.length - 1]?.id;
  }
}

/** The server's version (`server_version`). */
export async function postgresVersion(url: string): Promise<string> {
  return withPgClient(url, async (client) => {
    const result = await client.query<{ v: string }>(
      "SELECT current_setting('server_version') AS v",
    );
    return result.rows[0]?.v ?? 'unknown';
  });
}

const PG_TIMEOUT_MS = 10_000;

/** A `pg` client of its own, connected for `fn` and ended afterwards. */
export async function withPgClient<T>(
  url: string,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: PG_TIMEOUT_MS,
    application_name: 'mnemo-bench',
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Runs `cleanup` and exits 130 on SIGINT/SIGTERM; returns a function removing the handlers.
 * Remove them once the stores are gone, not before closing them: a signal in between would
 * end the process with its stores left behind.
 */
export function onSignals(cleanup: () => Promise<void>): () => void {
  const handler = (signal: NodeJS.Signals) => {
    process.stderr.write(`bench: ${signal}, removing the benchmark's stores…\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

/** What a benchmark holds on a store: what uses it (an engine), and the store itself. */
export interface StoreInUse {
  /** Closes what uses the store (the engine). */
  close(): Promise<void>;
  /** Removes the store (see `FreshStore.dispose`). */
  dispose(): Promise<void>;
}

/**
 * Runs `body`, then closes and removes the store, whatever happens: after
 * success (a cleanup that fails fails the run), after a failure (cleanup
 * failures are reported through `progress`, since they must not hide the
 * failure, which is thrown), and on SIGINT / SIGTERM (`onSignals`). The store
 * is removed even when closing failed. Each failure is reported once: a run
 * failing only in its cleanup throws the first cleanup failure and reports the
 * second. `close` and `dispose` must be idempotent (a signal may come during
 * the cleanup).
 */
export async function usingStore<T>(
  held: StoreInUse,
  progress: (line: string) => void,
  body: () => Promise<T>,
): Promise<T> {
  const stopOnSignal = onSignals(async () => {
    await held.close().catch(() => undefined);
    await held.dispose().catch(() => undefined);
  });
  const warn = (error: unknown) =>
    progress(`warning: cleaning up failed too: ${errorMessage(error)}`);
  try {
    let result: T;
    try {
      result = await body();
    } catch (error) {
      for (const failure of await cleanUp(held)) warn(failure);
      throw error;
    }
    const failures = await cleanUp(held);
    for (const failure of failures.slice(1)) warn(failure);
    if (failures.length > 0) throw failures[0];
    return result;
  } finally {
    stopOnSignal();
  }
}

/** Closes, then removes, the store, even after a failed close; returns the failures, in order. */
async function cleanUp(held: StoreInUse): Promise<unknown[]> {
  const failures: unknown[] = [];
  await held.close().catch((error: unknown) => failures.push(error));
  await held.dispose().catch((error: unknown) => failures.push(error));
  return failures;
}
