import { createServer } from 'node:net';
import { createEngine, MnemoError } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import type { PostgresPool } from '../src/pool.js';
import { adminQuery, describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function withUrl(change: (url: URL) => void): string {
  const url = new URL(PG_URL as string);
  change(url);
  return url.toString();
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs `action`, expecting STORE_UNAVAILABLE within `withinMs`; returns the error. */
async function expectUnavailable(
  action: () => Promise<unknown>,
  withinMs: number,
): Promise<MnemoError> {
  const started = Date.now();
  const error = await action().then(
    () => null,
    (e: unknown) => e,
  );
  expect(Date.now() - started).toBeLessThan(withinMs);
  expect(MnemoError.isInstance(error)).toBe(true);
  expect(error).not.toBeInstanceOf(pg.DatabaseError);
  expect((error as MnemoError).code).toBe('STORE_UNAVAILABLE');
  expect((error as MnemoError).cause).toBeDefined();
  return error as MnemoError;
}

describePostgres('PostgreSQL failures surface as STORE_UNAVAILABLE', () => {
  it('connection refused', async () => {
    const port = await closedPort();
    const store = createPostgresStore({
      connectionString: withUrl((u) => {
        u.port = String(port);
      }),
    });
    cleanup.push(() => store.close());
    const error = await expectUnavailable(() => store.init(), 10_000);
    expect((error.cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  it('TLS asked of a server without it', async () => {
    const store = createPostgresStore({
      connectionString: withUrl((u) => {
        u.searchParams.set('ssl', 'true');
      }),
    });
    cleanup.push(() => store.close());
    const error = await expectUnavailable(() => store.init(), 10_000);
    expect(error.message).toBe(
      'PostgreSQL: connecting failed: The server does not support SSL connections',
    );
  });

  it('authentication failure', async () => {
    const store = createPostgresStore({
      connectionString: withUrl((u) => {
        u.password = 'wrong-password';
      }),
    });
    cleanup.push(() => store.close());
    const error = await expectUnavailable(() => store.init(), 10_000);
    expect([error.details.sqlstate, (error.cause as { code?: string }).code]).toEqual([
      '28P01',
      '28P01',
    ]);
  });

  it('a role without the privileges the store needs, or a server that takes no writes', async () => {
    const role = uniqueSchema('noprivs');
    await adminQuery(`CREATE ROLE ${role} LOGIN PASSWORD 'noprivs-pw'`);
    cleanup.push(() => adminQuery(`DROP ROLE ${role}`));
    const store = createPostgresStore({
      connectionString: withUrl((u) => {
        u.username = role;
        u.password = 'noprivs-pw';
      }),
      schema: role,
    });
    cleanup.push(() => store.close());
    // It may not create a schema in the database.
    const error = await expectUnavailable(() => store.init(), 10_000);
    expect([error.details.sqlstate, (error.cause as { code?: string }).code]).toEqual([
      '42501',
      '42501',
    ]);
    expect(error.message).toMatch(/^PostgreSQL: .* failed: permission denied for database /);

    // A session whose transactions are read-only, as on a standby.
    const readOnly = createPostgresStore({
      connectionString: withUrl((u) => {
        u.searchParams.set('options', '-c default_transaction_read_only=on');
      }),
      schema: uniqueSchema('readonly'),
    });
    cleanup.push(() => readOnly.close());
    const refused = await expectUnavailable(() => readOnly.init(), 10_000);
    expect(refused.details.sqlstate).toBe('25006');
  });

  it('a role that may only read opens a schema with createSchema false, loads the caches in init() and recalls; its writes are refused', async () => {
    const schema = uniqueSchema('readonly');
    const role = uniqueSchema('reader');
    cleanup.push(() => dropSchema(schema));
    const embedder = createHashEmbedder({ dimensions: 16 });
    const writer = createEngine({
      store: createPostgresStore({
        connectionString: PG_URL as string,
        schema,
        preloadSearchIndex: true,
      }),
      embedder,
    });
    await writer.init();
    const { id } = await writer
      .as('agent-a')
      .remember({ content: 'a note for readers', scope: 'global' });
    await writer.close();
    await adminQuery(`CREATE ROLE ${role} LOGIN PASSWORD 'reader-pw'`);
    cleanup.push(() => adminQuery(`DROP OWNED BY ${role}; DROP ROLE ${role}`));
    await adminQuery(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    await adminQuery(`GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
    const reader = createEngine({
      store: createPostgresStore({
        connectionString: withUrl((u) => {
          u.username = role;
          u.password = 'reader-pw';
        }),
        schema,
        createSchema: false,
        // init() fails unless both caches load.
        preloadSearchIndex: true,
      }),
      embedder,
      readAuditing: false,
    });
    cleanup.push(() => reader.close());
    await reader.init();
    const b = reader.as('agent-b');
    for (const strategy of ['lexical', 'semantic', 'hybrid'] as const) {
      const { hits } = await b.recall({ query: 'note for readers', strategy });
      expect([strategy, hits.map((hit) => hit.record.id)]).toEqual([strategy, [id]]);
    }
    const refused = await expectUnavailable(() => b.remember({ content: 'a write' }), 10_000);
    expect(refused.details.sqlstate).toBe('42501');
  });

  it('a dropped connection fails the transaction, and the pool recovers without a restart', async () => {
    const schema = uniqueSchema('dropped');
    cleanup.push(() => dropSchema(schema));
    const application = `mnemo_dropped_${process.pid}`;
    const store = createPostgresStore({
      connectionString: withUrl((u) => u.searchParams.set('application_name', application)),
      schema,
    });
    cleanup.push(() => store.close());
    const engine = createEngine({ store });
    await engine.init();
    const agent = engine.as('agent-a');
    await agent.remember({ content: 'before the drop' });
    await expectUnavailable(
      () =>
        store.transaction(async (tx) => {
          await tx.auditHead('agent-a');
          await adminQuery(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
            [application],
          );
          await tx.auditHead('agent-a');
        }),
      10_000,
    );
    await agent.remember({ content: 'after the drop' });
    expect(
      (await agent.recall({ query: 'drop', limit: 10 })).hits
        .map((hit) => hit.record.content)
        .sort(),
    ).toEqual(['after the drop', 'before the drop']);
    expect((await engine.verifyAudit()).ok).toBe(true);
  });

  it('a statement timeout, not a hang, when a lock is held too long', async () => {
    const schema = uniqueSchema('timeout');
    cleanup.push(() => dropSchema(schema));
    const store = createPostgresStore({
      connectionString: PG_URL as string,
      schema,
      statementTimeoutMs: 300,
    });
    cleanup.push(() => store.close());
    const engine = createEngine({ store });
    await engine.init();
    const blocker = new pg.Client({ connectionString: PG_URL });
    await blocker.connect();
    cleanup.push(() => blocker.end());
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE "${schema}".mnemo_audit_heads IN ACCESS EXCLUSIVE MODE`);
    const error = await expectUnavailable(
      () => engine.as('agent-a').remember({ content: 'blocked' }),
      5_000,
    );
    expect(error.details.sqlstate).toBe('57014');
    await blocker.query('ROLLBACK');
    expect((await engine.as('agent-a').remember({ content: 'unblocked' })).deduplicated).toBe(
      false,
    );
    expect(
      await store.list({
        visibility: { agentId: 'agent-a', orgId: null, now: new Date() },
        filters: {},
      }),
    ).toHaveLength(1);
  });

  it('bad options are INVALID_INPUT, before any I/O', () => {
    for (const options of [
      {},
      { connectionString: PG_URL, pool: {} },
      { connectionString: PG_URL, schema: 'Bad-Schema' },
      { connectionString: PG_URL, schema: 'pg_mnemo' },
      { connectionString: PG_URL, vector: 'faiss' },
      { connectionString: PG_URL, vectorDimensions: 0 },
      { connectionString: PG_URL, statementTimeoutMs: -1 },
      { connectionString: PG_URL, prepareStatements: 'yes' },
      // Each bound, one past it.
      { connectionString: PG_URL, schema: `s${'x'.repeat(63)}` },
      { connectionString: PG_URL, schema: '1abc' },
      { connectionString: PG_URL, vectorDimensions: 16_001 },
      { connectionString: PG_URL, vectorDimensions: 1.5 },
      { connectionString: PG_URL, statementTimeoutMs: 0 },
      { connectionString: PG_URL, connectionTimeoutMs: 0 },
      { connectionString: PG_URL, maxConnections: 0 },
      { connectionString: PG_URL, maxConnections: 2.5 },
      { connectionString: PG_URL, createSchema: 'no' },
      { connectionString: PG_URL, vectorIndex: 'hnsw' },
      { connectionString: PG_URL, lexicalIndex: 'gin' },
      { connectionString: PG_URL, lexicalIndex: true },
    ]) {
      expect(() => createPostgresStore(options as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
    }
    expect(() => createPostgresStore(null as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    // And each bound itself is taken (createPostgresStore does no I/O).
    for (const options of [
      { connectionString: PG_URL as string, schema: `s${'x'.repeat(62)}` },
      { connectionString: PG_URL as string, schema: '_pg_x' },
      { connectionString: PG_URL as string, schema: 'pgx' },
      { connectionString: PG_URL as string, vectorDimensions: 1 },
      { connectionString: PG_URL as string, vectorDimensions: 16_000 },
      {
        connectionString: PG_URL as string,
        statementTimeoutMs: 1,
        connectionTimeoutMs: 1,
        maxConnections: 1,
        createSchema: false,
        prepareStatements: false,
        vector: 'pgvector' as const,
        vectorIndex: 'sql' as const,
        lexicalIndex: 'sql' as const,
      },
      { connectionString: PG_URL as string, lexicalIndex: 'memory' as const },
    ]) {
      expect(createPostgresStore(options).capabilities.name).toBe('postgres');
    }
    // The types refuse neither and both as well (the typecheck checks these lines).
    const invalidInput = expect.objectContaining({ code: 'INVALID_INPUT' });
    // @ts-expect-error neither pool nor connectionString
    expect(() => createPostgresStore({ schema: 'mnemo' })).toThrow(invalidInput);
    const pool = {} as PostgresPool;
    expect(() =>
      // @ts-expect-error both pool and connectionString
      createPostgresStore({ connectionString: 'postgres://localhost/x', pool }),
    ).toThrow(invalidInput);
  });
});
