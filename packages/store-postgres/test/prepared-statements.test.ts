import { createEngine } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore, type PostgresClient, type PostgresPool } from '../src/index.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A pool of one connection, so `pg_prepared_statements` shows everything the store prepared. */
function onePool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  cleanup.push(() => pool.end());
  return pool;
}

async function engineOn(pool: PostgresPool, prepareStatements?: boolean) {
  const schema = uniqueSchema('prepared');
  cleanup.push(() => dropSchema(schema));
  const engine = createEngine({
    store: createPostgresStore({ pool, schema, prepareStatements }),
    embedder: createHashEmbedder({ dimensions: 8 }),
  });
  await engine.init();
  cleanup.push(() => engine.close());
  return engine;
}

async function preparedNames(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    'SELECT name FROM pg_prepared_statements ORDER BY name',
  );
  return rows.map((row) => row.name);
}

describePostgres('prepared statements', () => {
  it('prepares each statement of a remember once per connection, and reuses it', async () => {
    const pool = onePool();
    const a = (await engineOn(pool as unknown as PostgresPool)).as('agent-a');
    expect(await preparedNames(pool)).toEqual([]);
    await a.remember({ content: 'first note' });
    await a.remember({ content: 'second note' });
    const first = await preparedNames(pool);
    // Dedup lock, dedup lookup, audit head read (the first write of the chain in this process)
    // and checked (the second), records with postings and statistics, audit events.
    expect(first).toHaveLength(6);
    expect(first.every((name) => /^mnemo_[0-9a-f]{40}$/.test(name))).toBe(true);
    for (let i = 0; i < 10; i += 1) await a.remember({ content: `note ${i}` });
    expect(await preparedNames(pool)).toEqual(first);
  });

  it('prepares no statement that looks up many records by key', async () => {
    // A prepared lookup soon runs a cached plan chosen for the table's size when it was made,
    // a sequential scan if the table was a few pages (see Session). A lone remember's one-key
    // dedup lookup is prepared; rememberMany's, the access counts' and the row locks' are not.
    const pool = onePool();
    const a = (await engineOn(pool as unknown as PostgresPool)).as('agent-a');
    const { id } = await a.remember({ content: 'hiking in the alps' });
    await a.remember({ content: 'hiking in the alps' });
    await a.rememberMany([{ content: 'alpine lakes' }, { content: 'hiking in the alps' }]);
    expect((await a.recall({ query: 'hiking alps', strategy: 'lexical' })).hits).toHaveLength(1);
    await a.forget({ ids: [id] });
    const { rows } = await pool.query<{ statement: string }>(
      'SELECT statement FROM pg_prepared_statements ORDER BY statement',
    );
    const starts = rows.map(({ statement }) =>
      statement
        .replace(/"[^"]+"\./g, '')
        .trim()
        .split(/\s+/)
        .slice(0, 3)
        .join(' '),
    );
    expect(starts).toEqual([
      'INSERT INTO mnemo_audit_heads',
      'SELECT dedup_key, id,',
      'SELECT pg_advisory_xact_lock(hashtextextended(k, 0))',
      'WITH appended AS',
      'WITH locked AS',
      'WITH src AS',
    ]);
  });

  it('with prepareStatements false, runs on a pool that takes only query strings', async () => {
    const pool = onePool();
    const textOnly = (target: { query: PostgresClient['query'] }) => ({
      query: (text: unknown, values?: unknown[]) => {
        if (typeof text !== 'string') throw new Error('this pool takes query strings only');
        return target.query(text, values);
      },
    });
    const wrapped: PostgresPool = {
      ...textOnly(pool as unknown as PostgresPool),
      connect: async () => {
        const client = await pool.connect();
        return {
          ...textOnly(client as unknown as PostgresClient),
          release: (error) => client.release(error),
          on: (event, listener) => client.on(event, listener),
          off: (event, listener) => client.off(event, listener),
        };
      },
      end: () => Promise.resolve(),
    };
    const engine = await engineOn(wrapped, false);
    const a = engine.as('agent-a');
    const { id } = await a.remember({ content: 'hiking in the alps' });
    await a.rememberMany([{ content: 'alpine lakes' }, { content: 'city walks' }]);
    const hits = (await a.recall({ query: 'hiking alps', strategy: 'lexical' })).hits;
    expect(hits.map((hit) => hit.record.id)).toEqual([id]);
    await a.forget({ ids: [id] });
    expect((await engine.verifyAudit()).ok).toBe(true);
    expect(await preparedNames(pool)).toEqual([]);
  });
});
