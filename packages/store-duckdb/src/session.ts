import type { DuckDBConnection, JS } from '@duckdb/node-api';
import { mapDuckDBError } from './errors.js';
import type { Params } from './sql.js';

export type Row = Record<string, JS>;

/** One DuckDB connection, with driver errors mapped to MnemoError. */
export class Session {
  constructor(readonly connection: DuckDBConnection) {}

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
