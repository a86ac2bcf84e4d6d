import pg from 'pg';
import type { PostgresStoreOptions } from './postgres-store.js';

/**
 * The slice of `pg` this store uses, structurally: any pool-like client with
 * these members plugs in (a `pg.Pool`, a pool wrapper, a test double).
 */
export interface PostgresQueryResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** A named prepared statement, as `pg` takes it (used unless `prepareStatements` is false). */
export interface PostgresQueryConfig {
  name: string;
  text: string;
  values?: unknown[];
}

export interface PostgresClient {
  query(text: string | PostgresQueryConfig, values?: unknown[]): Promise<PostgresQueryResult>;
  /**
   * True for a `pg` client in pipeline mode (`pipeline: true` in the pool's
   * options): the store then sends a statement while those before it still
   * await their replies.
   */
  readonly pipeline?: boolean;
  /** Returns the client to its pool; pass an error to have the pool discard it. */
  release(error?: Error | boolean): void;
  /** `pg` clients emit `error` when their connection dies; the store listens while it holds one. */
  on?(event: 'error', listener: (error: Error) => void): unknown;
  off?(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * `client`'s `query` as the store calls it. A client in pipeline mode gets each
 * statement at once. Any other gets each only once the one before it has been
 * answered: `pg` would queue it the same way, but queuing on a client warns
 * (deprecated in `pg` 8) and is gone in `pg` 9.
 */
export function statementsFor(client: PostgresClient): Pick<PostgresClient, 'query'> {
  if (client.pipeline === true) return client;
  let previous: Promise<unknown> = Promise.resolve();
  return {
    query: (text, values) => {
      const reply = previous.then(() => client.query(text, values));
      previous = reply.catch(() => undefined);
      return reply;
    },
  };
}

export interface PostgresPool {
  /** A dedicated client, for a transaction. */
  connect(): Promise<PostgresClient>;
  /** A one-off query on any idle client. */
  query(text: string | PostgresQueryConfig, values?: unknown[]): Promise<PostgresQueryResult>;
  end(): Promise<void>;
}

/**
 * The pool a store creates from `connectionString`. Its connections run with
 * JIT compilation off: PostgreSQL compiles any query it estimates above
 * `jit_above_cost`, which at 100,000 records already includes a filtered
 * lexical search (330 ms p50 with the compilation, 219 ms without), and
 * mnemo's queries are short enough that compiling never pays. Each new
 * connection runs `SET jit = off` before its first query (a startup option
 * instead would make poolers such as PgBouncer refuse the connection).
 */
export function ownPool(
  options: Pick<
    PostgresStoreOptions,
    'connectionString' | 'maxConnections' | 'connectionTimeoutMs' | 'statementTimeoutMs'
  >,
): PostgresPool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    query_timeout: (options.statementTimeoutMs ?? 30_000) + 5_000,
    // Pipeline mode: a query goes out while those before it on the connection still await
    // their replies (each with its own Sync, so an error fails only its query). The store sends
    // a write's dedup lock and lookup right behind BEGIN that way, and the statements whose
    // replies nothing in the transaction reads right behind each other (see PostgresStore.attempt).
    pipeline: true,
    // Runs on each new connection before the pool hands it out. A server without the setting
    // keeps its own; a lost connection fails the next query.
    verify: (client, done) => {
      client.query('SET jit = off').then(
        () => done(),
        () => done(),
      );
    },
  });
  // An idle client losing its connection (a server restart) must not crash the process;
  // the pool drops it and the next query reports STORE_UNAVAILABLE or reconnects.
  pool.on('error', () => undefined);
  // Nor a new client losing it during `verify`: the pool has removed its listener from the
  // client by then, and the store adds its own only once the client is handed out. An
  // 'error' event with no listener throws. The failed query reports the loss either way.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool as unknown as PostgresPool;
}
