import { afterEach, expect, it } from 'vitest';
import { ownPool } from '../src/pool.js';
import { describePostgres, PG_URL } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

describePostgres('the pool a store creates from a connection string', () => {
  it('runs every connection without JIT compilation, with the statement timeout', async () => {
    const pool = ownPool({ connectionString: PG_URL as string, statementTimeoutMs: 1_234 });
    cleanup.push(() => pool.end());
    // Several connections at once, so each new one is checked, not one reused.
    const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    try {
      for (const client of clients) {
        const settings = await client.query(
          "SELECT current_setting('jit') AS jit, current_setting('statement_timeout') AS timeout",
        );
        expect(settings.rows).toEqual([{ jit: 'off', timeout: '1234ms' }]);
      }
    } finally {
      for (const client of clients) client.release();
    }
    expect((await pool.query("SELECT current_setting('jit') AS jit")).rows).toEqual([
      { jit: 'off' },
    ]);
  });
});
