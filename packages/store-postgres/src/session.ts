import { createHash } from 'node:crypto';
import { mapPostgresError } from './errors.js';
import type { PostgresPool } from './pool.js';
import type { Params } from './sql.js';

export type Row = Record<string, unknown>;

/** Anything that runs one query: the pool (outside transactions) or one client (inside). */
export type Queryable = Pick<PostgresPool, 'query'>;

/**
 * Runs statements with driver errors mapped to MnemoError. `schema` is the
 * quoted schema name. With `prepare`, the statements the write path runs on
 * every call (`allPrepared`, `execPrepared`) are named prepared statements:
 * each connection parses and plans one once and reuses it, instead of once
 * per call. Never a lookup of many rows by key: PostgreSQL soon caches a
 * generic plan chosen for the table's size at that moment, and one made while
 * the table was a few pages is a sequential scan that stays one as the table
 * grows, until the next ANALYZE (a 500-key dedup lookup took 478 ms at 50,000
 * records, against 1.2 ms through the index). Inserts find conflicts through
 * their arbiter index whatever the plan; a one-key lookup pays at most one
 * scan per call until autovacuum analyzes the table (6 ms at 50,000 records).
 */
export class Session {
  constructor(
    readonly target: Queryable,
    readonly schema: string,
    readonly prepare = false,
    /** What every statement waits for before it is sent (see `after`). */
    private readonly ready: Promise<unknown> | null = null,
  ) {}

  /** This session, sending each statement only once `ready` has succeeded (and failing with it). */
  after(ready: Promise<unknown>): Session {
    return new Session(this.target, this.schema, this.prepare, ready);
  }

  /** Runs `fn` between BEGIN and COMMIT on this session (a client of its own); ROLLBACK when it fails. */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    await this.exec('BEGIN');
    try {
      const result = await fn();
      await this.exec('COMMIT');
      return result;
    } catch (error) {
      await this.exec('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  async all(sql: string, params?: Params): Promise<Row[]> {
    return (await this.run(sql, params, false, 'query')).rows;
  }

  async exec(sql: string, params?: Params): Promise<number> {
    return (await this.run(sql, params, false, 'statement')).rowCount ?? 0;
  }

  /** `all`, as a prepared statement when the session prepares. */
  async allPrepared(sql: string, params: Params): Promise<Row[]> {
    return (await this.run(sql, params, true, 'query')).rows;
  }

  /** `exec`, as a prepared statement when the session prepares. */
  async execPrepared(sql: string, params: Params): Promise<number> {
    return (await this.run(sql, params, true, 'statement')).rowCount ?? 0;
  }

  private async run(
    sql: string,
    params: Params | undefined,
    reuse: boolean,
    what: 'query' | 'statement',
  ): Promise<{ rows: Row[]; rowCount: number | null }> {
    if (this.ready !== null) await this.ready;
    try {
      return reuse && this.prepare
        ? await this.target.query({ name: statementName(sql), text: sql, values: params?.values })
        : await this.target.query(sql, params?.values);
    } catch (error) {
      throw mapPostgresError(error, what);
    }
  }
}

/** A prepared statement's name: a digest of its text, so equal texts share one statement. */
function statementName(sql: string): string {
  return `mnemo_${createHash('sha1').update(sql).digest('hex')}`;
}
