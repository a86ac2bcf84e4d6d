import { mapPostgresError } from './errors.js';
import type { Params } from './sql.js';

export type Row = Record<string, unknown>;

/** Anything that runs one query: the pool (outside transactions) or one client (inside). */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>;
}

/** Runs statements with driver errors mapped to MnemoError. `schema` is the quoted schema name. */
export class Session {
  constructor(
    readonly target: Queryable,
    readonly schema: string,
  ) {}

  async all(sql: string, params?: Params): Promise<Row[]> {
    try {
      return (await this.target.query(sql, params?.values)).rows;
    } catch (error) {
      throw mapPostgresError(error, 'query');
    }
  }

  async exec(sql: string, params?: Params): Promise<number> {
    try {
      return (await this.target.query(sql, params?.values)).rowCount ?? 0;
    } catch (error) {
      throw mapPostgresError(error, 'statement');
    }
  }
}
