import type { DuckDBConnection, DuckDBInstance, JS } from '@duckdb/node-api';
import { mapDuckDBError } from './errors.js';
import type { Params } from './sql.js';

export type Row = Record<string, JS>;

/** One DuckDB connection, with driver errors mapped to MnemoError. */
export class Session {
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

  async all(sql: string, params?: Params): Promise<Row[]> {
    try {
      const reader = await this.connection.runAndReadAll(sql, params?.values, params?.types);
      return reader.getRowObjectsJS();
    } catch (error) {
      throw mapDuckDBError(error, 'query');
    }
  }
}
