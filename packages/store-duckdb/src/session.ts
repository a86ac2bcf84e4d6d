import type {
  DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  DuckDBPreparedStatement,
} from '@duckdb/node-api';
import { type Row, rowObjects } from './chunks.js';
import { mapDuckDBError } from './errors.js';
import type { Params } from './sql.js';

export type { Row };

/** One DuckDB connection, with driver errors mapped to MnemoError. */
export class Session {
  // This connection's prepared statements, by SQL text (see execPrepared).
  private readonly prepared = new Map<string, DuckDBPreparedStatement>();

  constructor(readonly connection: DuckDBConnection) {}

  /** A session on `connection` (a new one of `instance` if not given) whose default database is `catalog`. */
  static async open(
    instance: DuckDBInstance,
    catalog: string,
    connection?: DuckDBConnection,
  ): Promise<Session> {
    const session = new Session(connection ?? (await instance.connect()));
    try {
      await session.exec(`USE ${catalog}`);
    } catch (error) {
      session.connection.closeSync();
      throw error;
    }
    return session;
  }

  async exec(sql: string, params?: Params): Promise<void> {
    try {
      await this.connection.run(sql, params?.values, params?.types);
    } catch (error) {
      throw mapDuckDBError(error, 'statement');
    }
  }

  /**
   * Runs `sql` as a prepared statement of this connection, prepared on its
   * first use: for the one-row statements every write or recall repeats,
   * parsing and planning were about half their cost (0.3–0.7 ms each). The
   * text must not vary between calls (values go in `params`), and the
   * session must run one statement at a time, as the writer's queue and
   * the pool of readers do.
   */
  async execPrepared(sql: string, params: Params): Promise<void> {
    try {
      await (await this.prepare(sql, params)).run();
    } catch (error) {
      throw mapDuckDBError(error, 'statement');
    }
  }

  /** `all` as a prepared statement (see `execPrepared`), for the queries every search repeats. */
  async allPrepared(sql: string, params: Params): Promise<Row[]> {
    try {
      return rowObjects(await (await this.prepare(sql, params)).run());
    } catch (error) {
      throw mapDuckDBError(error, 'query');
    }
  }

  private async prepare(sql: string, params: Params): Promise<DuckDBPreparedStatement> {
    let statement = this.prepared.get(sql);
    if (statement === undefined) {
      statement = await this.connection.prepare(sql);
      this.prepared.set(sql, statement);
    }
    statement.bind(params.values, params.types);
    return statement;
  }

  async all(sql: string, params?: Params): Promise<Row[]> {
    try {
      return rowObjects(await this.connection.run(sql, params?.values, params?.types));
    } catch (error) {
      throw mapDuckDBError(error, 'query');
    }
  }

  /**
   * Runs a query and hands its result to `onChunk` one data chunk (up to
   * 2,048 rows) at a time, for results too large to turn into row objects.
   */
  async eachChunk(sql: string, onChunk: (chunk: DuckDBDataChunk) => void): Promise<void> {
    try {
      const result = await this.connection.stream(sql);
      for (;;) {
        const chunk = await result.fetchChunk();
        if (chunk === null || chunk.rowCount === 0) return;
        onChunk(chunk);
      }
    } catch (error) {
      throw mapDuckDBError(error, 'query');
    }
  }
}
