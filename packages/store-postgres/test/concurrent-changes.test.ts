import { createEngine, type Engine, type ExportedRecord, type MemoryRecord } from '@mnemo/core';
import { afterAll, afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import {
  adminQuery,
  describePostgres,
  dropSchema,
  PG_URL,
  queryOn,
  uniqueSchema,
} from './database.js';

// Two stores on one schema, as two processes would be: each has its own pool, so their
// transactions really run at once on the server. Each race runs several rounds, since one
// round may happen to run the two calls one after the other.
const ROUNDS = 8;

const schemas: string[] = [];
const engines: Engine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

async function twoEngines(prefix: string): Promise<[Engine, Engine]> {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  const open = async () => {
    const engine = createEngine({
      store: createPostgresStore({ connectionString: PG_URL as string, schema, vector: 'array' }),
    });
    await engine.init();
    engines.push(engine);
    return engine;
  };
  const first = await open();
  return [first, await open()];
}

/** Every record of the store, in id order. */
async function allRecords(engine: Engine): Promise<MemoryRecord[]> {
  return engine.store.scanRecords({ limit: 10_000 });
}

/** The forget modes of the two stores in a round: every pair of different modes, in turn. */
const MODE_PAIRS = [
  ['soft', 'redact'],
  ['hard', 'soft'],
  ['redact', 'hard'],
] as const;

const outcome = (settled: PromiseSettledResult<unknown>) =>
  settled.status === 'fulfilled' ? 'ok' : (settled.reason as { code?: string }).code;

describePostgres('concurrent changes to one record from two stores', () => {
  it('forgets a record once: the second forget finds it gone (NOT_FOUND)', async () => {
    const [e1, e2] = await twoEngines('race_forget');
    for (let round = 0; round < ROUNDS; round += 1) {
      const [first, second] = MODE_PAIRS[round % MODE_PAIRS.length] as (typeof MODE_PAIRS)[number];
      const { id } = await e1.as('owner').remember({ content: `note ${round}`, scope: 'shared' });
      const settled = await Promise.allSettled([
        e1.as('owner').forget({ ids: [id], mode: first }),
        e2.as('owner').forget({ ids: [id], mode: second }),
      ]);
      expect(settled.map(outcome).sort()).toEqual(['NOT_FOUND', 'ok']);
      const events = await e1.store.readAudit({ limit: 1000 });
      expect(events.filter((e) => e.op === 'forget' && e.recordIds[0] === id)).toHaveLength(1);
    }
    expect((await e1.verifyAudit()).ok).toBe(true);
  });

  it('stores a memory remembered by both stores at once once: one caller gets it deduplicated', async () => {
    const [e1, e2] = await twoEngines('race_remember');
    for (let round = 0; round < ROUNDS; round += 1) {
      // A new agent each round: neither store knows its audit chain's head, so neither runs its
      // transaction again on a stale head (a run again would find the other's record anyway).
      const agent = `agent${round}`;
      const [a, b] = await Promise.all([
        e1.as(agent).remember({ content: 'the deploy key rotates on Mondays' }),
        e2.as(agent).remember({ content: 'the deploy key rotates on Mondays' }),
      ]);
      expect(b.id).toBe(a.id);
      expect([a.deduplicated, b.deduplicated].sort()).toEqual([false, true]);
    }
    const records = await allRecords(e1);
    expect(records.map((r) => r.agentId).sort()).toEqual(
      Array.from({ length: ROUNDS }, (_, round) => `agent${round}`),
    );
    expect((await e1.verifyAudit()).ok).toBe(true);
    expect((await e2.verifyRecords()).ok).toBe(true);
  });

  it('stores memories remembered in one batch by both stores at once once each', async () => {
    const [e1, e2] = await twoEngines('race_remember_many');
    const contents = Array.from({ length: 10 }, (_, i) => `runbook step ${i}`);
    for (let round = 0; round < ROUNDS; round += 1) {
      const agent = `agent${round}`; // a new audit chain each round, as above
      // In opposite orders, as two processes' batches may come: whichever store takes the
      // keys' locks first writes them all, and the other finds them all.
      const [forward, backward] = await Promise.all([
        e1.as(agent).rememberMany(contents.map((content) => ({ content }))),
        e2.as(agent).rememberMany(contents.toReversed().map((content) => ({ content }))),
      ]);
      expect(backward.toReversed().map((r) => r.id)).toEqual(forward.map((r) => r.id));
      expect(
        [forward, backward].map((results) => results.map((r) => r.deduplicated)).sort(),
      ).toEqual([Array(10).fill(false), Array(10).fill(true)]);
    }
    const records = await allRecords(e1);
    expect(records.map((r) => `${r.agentId}: ${r.content}`).sort()).toEqual(
      Array.from({ length: ROUNDS }, (_, round) =>
        contents.map((content) => `agent${round}: ${content}`),
      )
        .flat()
        .sort(),
    );
    expect((await e1.verifyAudit()).ok).toBe(true);
    expect((await e2.verifyRecords()).ok).toBe(true);
  });

  it('forgets records matched by one filter in both stores once: the second finds them gone', async () => {
    const [e1, e2] = await twoEngines('race_forget_filters');
    for (let round = 0; round < ROUNDS; round += 1) {
      const [first, second] = MODE_PAIRS[round % MODE_PAIRS.length] as (typeof MODE_PAIRS)[number];
      const tags = [`batch${round}`];
      const items = Array.from({ length: 5 }, (_, i) => ({ content: `log ${round}.${i}`, tags }));
      const ids = (await e1.as('owner').rememberMany(items)).map((result) => result.id).sort();
      const results = await Promise.all([
        e1.as('owner').forget({ filters: { tagsAll: tags }, mode: first }),
        e2.as('owner').forget({ filters: { tagsAll: tags }, mode: second }),
      ]);
      // Each record forgotten by exactly one of them, whichever locked the records first.
      expect(results.map((result) => result.forgotten).sort()).toEqual([[], ids]);
      const events = await e1.store.readAudit({ limit: 1000 });
      expect(
        events
          .filter((e) => e.op === 'forget' && ids.includes(e.recordIds[0] as string))
          .map((e) => e.recordIds),
      ).toEqual([ids]);
    }
    expect((await e1.verifyAudit()).ok).toBe(true);
    expect((await e2.verifyRecords()).ok).toBe(true);
  });

  it('counts every access of records touched at once in opposite orders', async () => {
    const [e1, e2] = await twoEngines('race_touch');
    const [x, y] = (
      await e1.as('owner').rememberMany([{ content: 'dog park' }, { content: 'dog walk' }])
    ).map((result) => result.id) as [string, string];
    const touches = [
      [e1, [x, y]],
      [e2, [y, x]],
    ] as const;
    for (let round = 0; round < ROUNDS; round += 1) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, round));
      const settled = await Promise.allSettled(
        touches.map(([engine, ids]) => engine.store.transaction((tx) => tx.touch([...ids], at))),
      );
      expect(settled.map(outcome)).toEqual(['ok', 'ok']);
    }
    const read = await e2.store.get({ agentId: 'owner', orgId: null, now: new Date() }, [x, y]);
    expect(
      read
        .map(({ record }) => [record.id, record.accessCount, record.lastAccessedAt?.getTime()])
        .sort(([a], [b]) => String(a).localeCompare(String(b))),
    ).toEqual([x, y].sort().map((id) => [id, 2 * ROUNDS, Date.UTC(2026, 0, 1, 0, 0, ROUNDS - 1)]));
  });

  it('keeps one grant per grantee: the share that commits last wins', async () => {
    const [e1, e2] = await twoEngines('race_share');
    for (let round = 0; round < ROUNDS; round += 1) {
      const { id } = await e1.as('owner').remember({ content: `doc ${round}`, scope: 'shared' });
      const later = new Date(Date.now() + 3_600_000);
      await Promise.all([
        e1.as('owner').share({ recordId: id, with: ['bob'], permission: 'admin' }),
        e2.as('owner').share({ recordId: id, with: ['bob'], permission: 'read', expiresAt: later }),
      ]);
      const grants = await e1.store.listGrants([id]);
      const shares = (await e1.store.readAudit({ limit: 1000 })).filter(
        (e) => e.op === 'share' && e.recordIds[0] === id,
      );
      expect(grants).toHaveLength(1);
      expect(grants[0]?.permission).toBe(shares.at(-1)?.details.permission);
    }
    // The share that lost was replaced by a later one of the same chain: not what bob holds.
    expect(await e2.verifyRecords()).toMatchObject({ ok: true, problems: [] });
  });

  it('leaves no grant behind on a record hard-forgotten while it was shared', async () => {
    const [e1, e2] = await twoEngines('race_share_forget');
    for (let round = 0; round < ROUNDS; round += 1) {
      const { id } = await e1.as('owner').remember({ content: `memo ${round}`, scope: 'shared' });
      const settled = await Promise.allSettled([
        e1.as('owner').share({ recordId: id, with: ['bob'], permission: 'read' }),
        e2.as('owner').forget({ ids: [id], mode: 'hard' }),
      ]);
      expect(settled[1]?.status).toBe('fulfilled');
      expect(['ok', 'NOT_FOUND']).toContain(outcome(settled[0] as PromiseSettledResult<unknown>));
      expect(await e1.store.listGrants([id])).toEqual([]);
    }
    const orphans = await adminQuery(
      `SELECT count(*)::int AS n FROM "${schemas.at(-1)}".mnemo_grants g
       WHERE NOT EXISTS (SELECT 1 FROM "${schemas.at(-1)}".mnemo_records r WHERE r.id = g.record_id)`,
    );
    expect(orphans.rows).toEqual([{ n: 0 }]);
  });

  it('imports one export twice at once: one import writes the records, the other skips them', async () => {
    const [source] = await twoEngines('race_import_source');
    for (let i = 0; i < 50; i += 1) await source.as('owner').remember({ content: `record ${i}` });
    const exported: ExportedRecord[] = [];
    for await (const item of source.exportRecords()) exported.push(item);
    const [d1, d2] = await twoEngines('race_import_target');
    const results = await Promise.all([d1.importRecords(exported), d2.importRecords(exported)]);
    expect(results.map((r) => [r.imported, r.skipped]).sort()).toEqual([
      [0, 50],
      [50, 0],
    ]);
    expect((await d1.verifyAudit()).events).toBe(50);
  });
});

describePostgres('stores of several schemas initialized at once', () => {
  it('all get the pgvector column when the server has the extension', async () => {
    const [available] = (
      await adminQuery(`SELECT 1 AS ok FROM pg_available_extensions WHERE name = 'vector'`)
    ).rows;
    if (available === undefined) return; // no pgvector on this server: nothing to race on
    // A fresh database per round, so the extension is created by the racing stores.
    for (let round = 0; round < 3; round += 1)
      await initRace(`mnemo_ext_race_${process.pid}_${round}`);
  });
});

async function initRace(database: string): Promise<void> {
  await adminQuery(`DROP DATABASE IF EXISTS ${database}`);
  await adminQuery(`CREATE DATABASE ${database}`);
  const url = new URL(PG_URL as string);
  url.pathname = `/${database}`;
  try {
    const stores = ['s1', 's2', 's3', 's4'].map((schema, i) =>
      createPostgresStore({
        connectionString: url.href,
        schema,
        vector: i < 2 ? 'auto' : 'pgvector',
        vectorDimensions: 4,
      }),
    );
    const settled = await Promise.allSettled(stores.map((store) => store.init()));
    await Promise.all(stores.map((store) => store.close()));
    expect(settled.map(outcome)).toEqual(['ok', 'ok', 'ok', 'ok']);
    const columns = await queryOn(
      url.href,
      `SELECT n.nspname AS schema, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relname = 'mnemo_records' AND a.attname = 'embedding' ORDER BY 1`,
    );
    expect(columns.rows).toEqual(
      ['s1', 's2', 's3', 's4'].map((schema) => ({ schema, type: 'vector(4)' })),
    );
  } finally {
    await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  }
}
