import { createEngine, type Engine, MnemoError } from '@mnemo/core';
import { afterAll, afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { ownPool, type PostgresPool } from '../src/pool.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';
import { wrapClients } from './wrap-clients.js';

const schemas: string[] = [];
const engines: Engine[] = [];
const pools: PostgresPool[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  for (const pool of pools.splice(0)) await pool.end();
});
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

/**
 * An engine whose record inserts fail on the server with `sqlstates`, one per
 * insert, in turn (then succeed), as a deadlock or a serialization failure
 * would fail them; `runs` counts the transactions begun, and notes what
 * each client was released with.
 */
async function failingInserts(sqlstates: string[]) {
  const schema = uniqueSchema('retries');
  schemas.push(schema);
  const inner = ownPool({ connectionString: PG_URL as string });
  pools.push(inner);
  const runs = { begun: 0, released: [] as unknown[] };
  const wrapped = wrapClients(inner, (client, text) => (config, values) => {
    const statement = text(config);
    if (statement === 'BEGIN') runs.begun += 1;
    const sqlstate = statement === 'WITH src AS' ? sqlstates.shift() : undefined;
    if (sqlstate === undefined) return client.query(config, values);
    // Raised by the server, so that it aborts the transaction as a real deadlock does.
    return client.query(
      `DO $$ BEGIN RAISE EXCEPTION 'injected failure' USING ERRCODE = '${sqlstate}'; END $$`,
    );
  });
  // What each client was released with (an error discards it).
  const pool: PostgresPool = {
    ...wrapped,
    connect: async () => {
      const client = await wrapped.connect();
      return {
        ...client,
        release: (error) => {
          runs.released.push(error);
          client.release(error);
        },
      };
    },
  };
  const engine = createEngine({
    store: createPostgresStore({ pool, schema, vector: 'array' }),
  });
  await engine.init();
  engines.push(engine);
  runs.begun = 0; // init()'s migrations ran some
  return { engine, runs, schema };
}

describePostgres('transactions that lose a deadlock or a serialization failure', () => {
  it('run again, up to three runs in all, and commit once', async () => {
    const { engine, runs } = await failingInserts(['40P01', '40001']);
    const { id } = await engine.as('agent-a').remember({ content: 'a note' });
    expect(runs.begun).toBe(3);
    expect((await engine.store.scanRecords({ limit: 10 })).map((r) => r.id)).toEqual([id]);
    expect(await engine.verifyAudit()).toMatchObject({ ok: true, events: 1 });
  });

  it('fail with STORE_UNAVAILABLE after the third run, writing nothing', async () => {
    const { engine, runs } = await failingInserts(['40P01', '40P01', '40P01']);
    const error = await engine
      .as('agent-a')
      .remember({ content: 'a note' })
      .catch((e: unknown) => e);
    expect(MnemoError.isInstance(error) && [error.code, error.details.sqlstate]).toEqual([
      'STORE_UNAVAILABLE',
      '40P01',
    ]);
    expect(runs.begun).toBe(3);
    expect(await engine.store.scanRecords({ limit: 10 })).toEqual([]);
    expect(await engine.verifyAudit()).toMatchObject({ ok: true, events: 0 });
    // The next call runs as usual.
    await engine.as('agent-a').remember({ content: 'a note' });
    expect(runs.begun).toBe(4);
  });

  it('are not run again for any other failure', async () => {
    // 22012 (division by zero) too: only a chain head found stale runs again on it.
    for (const sqlstate of ['23505', '22012']) {
      const { engine, runs } = await failingInserts([sqlstate]);
      const error = await engine
        .as('agent-a')
        .remember({ content: 'a note' })
        .catch((e: unknown) => e);
      expect(MnemoError.isInstance(error) && [error.code, error.details.sqlstate]).toEqual([
        'INTERNAL',
        sqlstate,
      ]);
      expect(runs.begun).toBe(1);
      expect(await engine.store.scanRecords({ limit: 10 })).toEqual([]);
    }
  });

  it('discard their connection when they fail with STORE_UNAVAILABLE, and only then', async () => {
    // A statement timeout (57014) may leave the connection busy; a unique violation does not.
    for (const [sqlstate, discarded] of [
      ['57014', true],
      ['23505', false],
    ] as const) {
      const { engine, runs } = await failingInserts([sqlstate]);
      runs.released.length = 0;
      await expect(engine.as('agent-a').remember({ content: 'a note' })).rejects.toThrow();
      expect(runs.released.map((error) => MnemoError.isInstance(error))).toEqual([discarded]);
    }
  });

  it('expect no chain head in their last run, so a head another process advanced cannot fail it', async () => {
    const failures: string[] = [];
    const { engine, runs, schema } = await failingInserts(failures);
    await engine.as('agent-a').remember({ content: 'one' }); // its head is now known
    const other = createEngine({
      store: createPostgresStore({ connectionString: PG_URL as string, schema, vector: 'array' }),
    });
    await other.init();
    engines.push(other);
    await other.as('agent-a').remember({ content: 'two' });
    // Both failed runs expected the head this process knew (the deadlock, reported first,
    // hid that it was stale); the last reads it.
    failures.push('40P01', '40P01');
    runs.begun = 0;
    await engine.as('agent-a').remember({ content: 'three' });
    expect(runs.begun).toBe(3);
    expect(await engine.verifyAudit()).toMatchObject({ ok: true, events: 3 });
  });
});
