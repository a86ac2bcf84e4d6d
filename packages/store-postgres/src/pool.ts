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
  /** Returns the client to its pool; pass an error to have the pool discard it. */
  release(error?: Error | boolean): void;
  /** `pg` clients emit `error` when their connection dies; the store listens while it holds one. */
  on?(event: 'error', listener: (error: Error) => void): unknown;
  off?(event: 'error', listener: (error: Error) => void): unknown;
}

export interface PostgresPool {
  /** A dedicated client, for a transaction. */
  connect(): Promise<PostgresClient>;
  /** A one-off query on any idle client. */
  query(text: string | PostgresQueryConfig, values?: unknown[]): Promise<PostgresQueryResult>;
  end(): Promise<void>;
}
