import { createEngine, planAccess } from '@mnemo/core';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { ownPool, type PostgresPool } from '../src/pool.js';
import { adminQuery, describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';
import { wrapClients } from './wrap-clients.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * `inner`, recording each statement its transactions' clients send, with the
 * statements still unanswered on that client then.
 */
function recordSends(inner: PostgresPool) {
  const sent: { statement: string; unanswered: string[] }[] = [];
  const pool = wrapClients(inner, (client, text) => {
    const pending: string[] = [];
    return (config, values) => {
      const statement = text(config);
      sent.push({ statement, unanswered: [...pending] });
      pending.push(statement);
      const done = () => pending.splice(pending.indexOf(statement), 1);
      const reply = client.query(config, values);
      reply.then(done, done);
      return reply;
    };
  });
  return { pool, sent };
}

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

  it('takes its size and timeouts from the options, by default 10 connections, 5 s to connect, 30 s a statement', async () => {
    const settings = (options: Parameters<typeof ownPool>[0]) => {
      const pool = ownPool(options) as unknown as pg.Pool;
      cleanup.push(() => pool.end());
      const { max, connectionTimeoutMillis, statement_timeout, query_timeout } = pool.options;
      return { max, connectionTimeoutMillis, statement_timeout, query_timeout };
    };
    expect(settings({ connectionString: PG_URL as string })).toEqual({
      max: 10,
      connectionTimeoutMillis: 5_000,
      statement_timeout: 30_000,
      // The client gives up 5 s after the server should have.
      query_timeout: 35_000,
    });
    expect(
      settings({
        connectionString: PG_URL as string,
        maxConnections: 3,
        connectionTimeoutMs: 700,
        statementTimeoutMs: 1_234,
      }),
    ).toEqual({
      max: 3,
      connectionTimeoutMillis: 700,
      statement_timeout: 1_234,
      query_timeout: 6_234,
    });
  });

  it('survives connections killed while new or in use: every failing call is STORE_UNAVAILABLE', async () => {
    // Its own application name, so that only this test's connections are killed.
    const name = `mnemo-killed-${process.pid}`;
    const url = new URL(PG_URL as string);
    url.searchParams.set('application_name', name);
    const schema = uniqueSchema('killed');
    cleanup.push(() => dropSchema(schema));
    const engine = createEngine({
      store: createPostgresStore({ connectionString: url.toString(), schema }),
    });
    await engine.init();
    cleanup.push(() => engine.close());
    const agent = engine.as('agent-a');
    await agent.remember({ content: 'apples are red' });
    let stop = false;
    const killer = (async () => {
      while (!stop) {
        await adminQuery(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
          [name],
        );
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const outcomes = new Map<string, number>();
    try {
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 100; i += 1) {
            const outcome = await agent.recall({ query: 'apples', strategy: 'lexical' }).then(
              () => 'ok',
              (error: { code?: string }) => String(error.code),
            );
            outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          }
        }),
      );
    } finally {
      stop = true;
      await killer;
    }
    expect([...outcomes.keys()].filter((outcome) => outcome !== 'ok')).toEqual([
      'STORE_UNAVAILABLE',
    ]);
    // Once the killing stops, the pool connects again.
    expect((await agent.recall({ query: 'apples' })).hits.length).toBe(1);
  });

  it("sends a write's dedup lock and lookup right behind BEGIN, and the records, accesses, expected chain head and audit events without waiting for their replies", async () => {
    const inner = ownPool({ connectionString: PG_URL as string });
    cleanup.push(() => inner.end());
    const { pool, sent } = recordSends(inner);
    const schema = uniqueSchema('pipeline');
    cleanup.push(() => dropSchema(schema));
    const engine = createEngine({ store: createPostgresStore({ pool, schema }) });
    await engine.init();
    cleanup.push(() => engine.close());
    const held = await inner.connect();
    held.release();
    expect((held as { pipeline?: boolean }).pipeline).toBe(true);
    sent.length = 0;
    await engine.as('agent-a').remember({ content: 'a note' });
    expect(sent.map(({ statement, unanswered }) => [statement, unanswered])).toEqual([
      ['BEGIN', []],
      ['SELECT pg_advisory_xact_lock hashtextextended', ['BEGIN']],
      ['SELECT dedup_key, id,', ['BEGIN', 'SELECT pg_advisory_xact_lock hashtextextended']],
      ['WITH src AS', []],
      ['INSERT INTO mnemo_audit_heads', ['WITH src AS']],
      ['WITH appended AS', []],
      ['COMMIT', ['WITH appended AS']],
    ]);
    // The chain's head is now known: it is locked and checked without waiting for the reply.
    sent.length = 0;
    await engine.as('agent-a').recall({ query: 'note', strategy: 'lexical' });
    const accesses = 'INSERT INTO mnemo_accesses';
    expect(sent.map(({ statement, unanswered }) => [statement, unanswered])).toEqual([
      ['BEGIN', []],
      [accesses, []],
      ['WITH locked AS', [accesses]],
      ['WITH appended AS', [accesses, 'WITH locked AS']],
      ['COMMIT', [accesses, 'WITH locked AS', 'WITH appended AS']],
    ]);
    sent.length = 0;
    await engine.as('agent-a').remember({ content: 'another note' });
    expect(sent.map(({ statement, unanswered }) => [statement, unanswered])).toEqual([
      ['BEGIN', []],
      ['SELECT pg_advisory_xact_lock hashtextextended', ['BEGIN']],
      ['SELECT dedup_key, id,', ['BEGIN', 'SELECT pg_advisory_xact_lock hashtextextended']],
      ['WITH src AS', []],
      ['WITH locked AS', ['WITH src AS']],
      ['WITH appended AS', ['WITH src AS', 'WITH locked AS']],
      ['COMMIT', ['WITH src AS', 'WITH locked AS', 'WITH appended AS']],
    ]);
  });

  it('runs no write when BEGIN fails: only the dedup lock and lookup went out behind it', async () => {
    const inner = ownPool({ connectionString: PG_URL as string });
    cleanup.push(() => inner.end());
    let refuse = false;
    const pool = wrapClients(
      inner,
      (client, text) => (config, values) =>
        refuse && text(config) === 'BEGIN'
          ? Promise.reject(Object.assign(new Error('BEGIN refused'), { code: '08006' }))
          : client.query(config, values),
    );
    const schema = uniqueSchema('pipeline');
    cleanup.push(() => dropSchema(schema));
    const engine = createEngine({ store: createPostgresStore({ pool, schema }) });
    await engine.init();
    cleanup.push(() => engine.close());
    const a = engine.as('agent-a');
    await a.remember({ content: 'a note' });
    refuse = true;
    // A remember starts with the dedup lookup; a recall's audit transaction with its accesses.
    const unavailable = { code: 'STORE_UNAVAILABLE' };
    await expect(a.remember({ content: 'another note' })).rejects.toMatchObject(unavailable);
    await expect(a.recall({ query: 'note' })).rejects.toMatchObject(unavailable);
    refuse = false;
    const counts = await adminQuery(
      `SELECT (SELECT count(*) FROM "${schema}".mnemo_records)::int AS records,
              (SELECT count(*) FROM "${schema}".mnemo_accesses)::int AS accesses,
              (SELECT count(*) FROM "${schema}".mnemo_audit_events)::int AS events`,
    );
    expect(counts.rows).toEqual([{ records: 1, accesses: 0, events: 1 }]);
  });

  it.each([
    ['the records', 'mnemo_records', ['remember']],
    ['the plan tokens', 'mnemo_plan_token_df', ['plan']],
    ['the audit events', 'mnemo_audit_events', ['remember', 'plan', 'recall']],
    ['the accesses', 'mnemo_accesses', ['recall']],
  ])(
    'fails a transaction whose statement for %s, sent without waiting, fails on the server, with that error, writing nothing',
    async (_, table, refusedCalls) => {
      const pool = ownPool({ connectionString: PG_URL as string });
      cleanup.push(() => pool.end());
      const schema = uniqueSchema('pipeline');
      cleanup.push(() => dropSchema(schema));
      const engine = createEngine({
        store: createPostgresStore({ pool, schema }),
        experienceMemory: true,
      });
      await engine.init();
      cleanup.push(() => engine.close());
      const a = engine.as('agent-a');
      const first = await a.remember({ content: 'a note' });
      await a.recall({ query: 'note', strategy: 'lexical' });
      const state = () =>
        adminQuery(
          `SELECT (SELECT count(*) FROM "${schema}".mnemo_records)::int AS records,
                (SELECT count(*) FROM "${schema}".mnemo_plan_token_df)::int AS tokens,
                (SELECT coalesce(sum(df), 0) FROM "${schema}".mnemo_plan_token_df)::int AS df,
                (SELECT count(*) FROM "${schema}".mnemo_accesses)::int AS accesses,
                (SELECT count(*) FROM "${schema}".mnemo_audit_events)::int AS events,
                (SELECT seq FROM "${schema}".mnemo_audit_heads WHERE seq > 0)::int AS head`,
        ).then((result) => result.rows);
      const before = [{ records: 1, tokens: 0, df: 0, accesses: 1, events: 2, head: 2 }];
      expect(await state()).toEqual(before);
      await adminQuery(
        `CREATE FUNCTION "${schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS
         $$BEGIN RAISE EXCEPTION 'refused by a trigger' USING ERRCODE = '23514'; END$$;
       CREATE TRIGGER refuse BEFORE INSERT ON "${schema}".${table}
         FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse()`,
      );
      const refused = {
        code: 'INTERNAL',
        message: expect.stringContaining('refused by a trigger'),
        details: { sqlstate: '23514' },
      };
      const plan = (query: string) =>
        planAccess(a).writePlan({ query, payload: {}, tokens: ['find', 'notes'] });
      if (refusedCalls.includes('remember')) {
        await expect(a.remember({ content: 'another note' })).rejects.toMatchObject(refused);
        // Two writes in one group: the group fails, then each alone.
        const both = [a.remember({ content: 'note three' }), a.remember({ content: 'note four' })];
        for (const write of both) await expect(write).rejects.toMatchObject(refused);
      }
      if (refusedCalls.includes('plan')) {
        await expect(plan('find my notes')).rejects.toMatchObject(refused);
      }
      if (refusedCalls.includes('recall')) {
        await expect(a.recall({ query: 'note', strategy: 'lexical' })).rejects.toMatchObject(
          refused,
        );
      }
      expect(await state()).toEqual(before);
      await adminQuery(`DROP TRIGGER refuse ON "${schema}".${table}`);
      // Two plans with the same tokens, in one group: each token counts twice.
      await Promise.all([plan('find my notes'), plan('find the notes')]);
      const hits = await a.recall({ query: 'note', strategy: 'lexical' });
      expect(hits.hits.map((hit) => [hit.record.id, hit.record.accessCount])).toEqual([
        [first.id, 1],
      ]);
      expect(await state()).toEqual([
        { records: 3, tokens: 2, df: 4, accesses: 2, events: 5, head: 5 },
      ]);
    },
  );
});

describePostgres('a pool you pass in, without pipeline mode', () => {
  it('gets one statement at a time on each client, so that pg never queues one (deprecated, and gone in pg 9)', async () => {
    const inner = new pg.Pool({ connectionString: PG_URL as string, max: 3 });
    inner.on('error', () => undefined);
    cleanup.push(() => inner.end());
    const { pool, sent } = recordSends(inner as unknown as PostgresPool);
    const schema = uniqueSchema('nopipeline');
    cleanup.push(() => dropSchema(schema));
    const engine = createEngine({ store: createPostgresStore({ pool, schema }) });
    await engine.init();
    cleanup.push(() => engine.close());
    // init ran its migrations through a transaction's client too.
    expect(sent.filter(({ unanswered }) => unanswered.length > 0)).toEqual([]);
    sent.length = 0;
    const a = engine.as('agent-a');
    const first = await a.remember({ content: 'a note', scope: 'shared' });
    await a.remember({ content: 'another note' });
    await Promise.all([
      a.remember({ content: 'note three' }),
      a.remember({ content: 'note four' }),
    ]);
    await a.rememberMany([{ content: 'note five' }, { content: 'note six' }]);
    await a.share({ recordId: first.id, with: ['agent-b'], permission: 'read' });
    expect((await engine.as('agent-b').recall({ query: 'note' })).hits.length).toBe(1);
    expect((await a.recall({ query: 'note', strategy: 'lexical' })).hits.length).toBe(6);
    await a.forget({ ids: [first.id], mode: 'hard' });
    expect(sent.filter(({ unanswered }) => unanswered.length > 0)).toEqual([]);
    // Each write above (the two at once in one group) and each recall's audit went through a
    // transaction's client: the check saw them all.
    expect(sent.filter(({ statement }) => statement === 'COMMIT').length).toBe(8);
    expect((await engine.verifyAudit()).ok).toBe(true);
  });
});
