import { createEngine, type MemoryStore, type Visibility } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { afterEach, expect, it } from 'vitest';
import { ACCESS_FOLD_ROWS } from '../src/access-log.js';
import { createPostgresStore } from '../src/index.js';
import { adminQuery, describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function newSchema(): string {
  const schema = uniqueSchema('accesses');
  cleanup.push(() => dropSchema(schema));
  return schema;
}

function open(schema: string) {
  const store = createPostgresStore({
    connectionString: PG_URL as string,
    schema,
    maxConnections: 4,
  });
  cleanup.push(() => store.close());
  const clock = createManualClock('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock, ids: createSequentialIds() });
  return { store, engine, clock };
}

const everyone = (now: Date): Visibility => ({ agentId: 'agent-a', orgId: null, now });

/** `[id, accessCount, lastAccessedAt as ISO or null]` of `ids` as the store reads them, by id (sequential ids sort as made). */
async function counts(store: MemoryStore, ids: readonly string[], now: Date) {
  return (await store.get(everyone(now), ids))
    .map(({ record }) => [
      record.id,
      record.accessCount,
      record.lastAccessedAt?.toISOString() ?? null,
    ])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
}

/** What the schema holds: rows in the access log, and each record's folded count and time. */
async function inSchema(schema: string) {
  const logged = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}".mnemo_accesses`);
  const records = await adminQuery(
    `SELECT id, access_count::int AS c, last_accessed_at::float8 AS at FROM "${schema}".mnemo_records ORDER BY id`,
  );
  return {
    logged: logged.rows[0].n as number,
    records: records.rows.map((r) => [r.id, r.c, r.at]) as [string, number, number | null][],
  };
}

describePostgres('PostgreSQL access counts, logged and folded', () => {
  it("logs a recall's accesses instead of updating the records, and every process counts them exactly", async () => {
    const schema = newSchema();
    const first = open(schema);
    await first.engine.init();
    const a = first.engine.as('agent-a');
    const { id: x } = await a.remember({ content: 'apples and pears' });
    const { id: y } = await a.remember({ content: 'apples and plums' });
    const { id: z } = await a.remember({ content: 'cherries' });
    for (let i = 0; i < 3; i += 1) {
      first.clock.advance(1000);
      expect((await a.recall({ query: 'apples' })).hits).toHaveLength(2);
    }
    first.clock.advance(1000);
    await a.recall({ query: 'cherries' });
    const expected = [
      [x, 3, '2026-01-01T00:00:03.000Z'],
      [y, 3, '2026-01-01T00:00:03.000Z'],
      [z, 1, '2026-01-01T00:00:04.000Z'],
    ];
    expect(await counts(first.store, [x, y, z], first.clock.now())).toEqual(expected);
    expect((await a.get(z)).accessCount).toBe(1);
    expect((await a.recall({ query: 'cherries' })).hits.map((h) => h.record.accessCount)).toEqual([
      1,
    ]);
    // Eight accesses logged; the records themselves untouched.
    expect(await inSchema(schema)).toEqual({
      logged: 8,
      records: [
        [x, 0, null],
        [y, 0, null],
        [z, 0, null],
      ],
    });
    // Another process reads the same counts.
    const second = open(schema);
    await second.engine.init();
    expect(await counts(second.store, [x, y, z], first.clock.now())).toEqual([
      expected[0],
      expected[1],
      [z, 2, '2026-01-01T00:00:04.000Z'],
    ]);
  });

  it('lets recalls of the same record in other transactions go on: the accesses take no lock a reader waits for', async () => {
    const schema = newSchema();
    const { store, engine, clock } = open(schema);
    await engine.init();
    const { id } = await engine.as('agent-a').remember({ content: 'a note' });
    const at = clock.now();
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let touched!: () => void;
    const first = new Promise<void>((resolve) => {
      touched = resolve;
    });
    // A transaction that has counted its access and is still open…
    const open1 = store.transaction(async (tx) => {
      await tx.touch([id], at);
      touched();
      await held;
    });
    await first;
    // …does not hold up another one counting an access to the same record (an UPDATE of the
    // record would wait for it to end, and this test would never finish).
    await store.transaction((tx) => tx.touch([id], at));
    expect(await counts(store, [id], at)).toEqual([[id, 1, at.toISOString()]]);
    release();
    await open1;
    expect(await counts(store, [id], at)).toEqual([[id, 2, at.toISOString()]]);
  });

  it(`folds the log once a process has logged ${ACCESS_FOLD_ROWS} accesses, in the background`, async () => {
    const schema = newSchema();
    const { store, engine } = open(schema);
    await engine.init();
    const a = engine.as('agent-a');
    const ids: string[] = [];
    for (let i = 0; i < 50; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
    const touches = Math.ceil(ACCESS_FOLD_ROWS / 50) + 10;
    for (let i = 0; i < touches; i += 1) {
      await store.transaction((tx) => tx.touch(ids, new Date(Date.UTC(2026, 0, 2, 0, 0, i))));
    }
    await engine.close();
    // The fold started after the touch that brought this process's accesses to
    // ACCESS_FOLD_ROWS, while later touches went on, and close() waited for it: what it
    // moved is in the records, the rest still logged.
    const after = await inSchema(schema);
    const folded = new Set(after.records.map(([, c]) => c));
    expect(folded.size).toBe(1);
    const [inRecords] = [...folded] as [number];
    expect(inRecords).toBeGreaterThanOrEqual(Math.ceil(ACCESS_FOLD_ROWS / 50));
    expect(after.logged).toBe((touches - inRecords) * 50);
  });

  it('counts the accesses toward the next fold from zero once a fold starts', async () => {
    const schema = newSchema();
    const { store, engine } = open(schema);
    await engine.init();
    const a = engine.as('agent-a');
    const ids: string[] = [];
    for (let i = 0; i < 64; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
    const touch = () => store.transaction((tx) => tx.touch(ids, new Date(Date.UTC(2026, 0, 2))));
    // Exactly a fold's worth: the last touch starts the fold, which takes the whole log.
    for (let i = 0; i < ACCESS_FOLD_ROWS / 64; i += 1) await touch();
    for (let waited = 0; (await inSchema(schema)).logged > 0; waited += 1) {
      expect(waited).toBeLessThan(500);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // One more touch is the first of the next fold's worth: logged, not folded.
    await touch();
    await engine.close(); // waits for a fold running, if any
    const after = await inSchema(schema);
    expect(after.logged).toBe(64);
    expect(new Set(after.records.map(([, c]) => c))).toEqual(new Set([ACCESS_FOLD_ROWS / 64]));
  });

  it('rolls a fold that fails back, and hands its connection back to the pool usable', async () => {
    const schema = newSchema();
    // One connection: the fold gets it after the touch that started it, then the next call.
    const store = createPostgresStore({
      connectionString: PG_URL as string,
      schema,
      maxConnections: 1,
    });
    cleanup.push(() => store.close());
    const engine = createEngine({ store, ids: createSequentialIds() });
    await engine.init();
    const a = engine.as('agent-a');
    const ids: string[] = [];
    for (let i = 0; i < 64; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
    // The fold's UPDATE of the records fails (not for want of a server).
    await adminQuery(
      `CREATE FUNCTION "${schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'no fold today'; END $$`,
    );
    await adminQuery(
      `CREATE TRIGGER refuse BEFORE UPDATE OF access_count ON "${schema}".mnemo_records
         FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse()`,
    );
    for (let i = 0; i < ACCESS_FOLD_ROWS / 64; i += 1) {
      await store.transaction((tx) => tx.touch(ids, new Date(Date.UTC(2026, 0, 2))));
    }
    // Runs on the connection the failed fold had.
    expect((await store.auditHeads()).map((head) => [head.chain, head.seq])).toEqual([
      ['agent-a', 64],
    ]);
    await engine.close();
    const after = await inSchema(schema);
    expect(after.logged).toBe(ACCESS_FOLD_ROWS);
    expect(new Set(after.records.map(([, c]) => c))).toEqual(new Set([0]));
  });

  it(`folds at init() a log that processes too short-lived to fold left at ${ACCESS_FOLD_ROWS} rows or more`, async () => {
    const schema = newSchema();
    const first = open(schema);
    await first.engine.init();
    const { id } = await first.engine.as('agent-a').remember({ content: 'a note' });
    await first.engine.close();
    // What many processes that each logged a few accesses leave behind: one short of a fold…
    const at = (n: number) => Date.parse('2026-01-01T00:00:00.000Z') + n;
    const logAccesses = (from: number, to: number) =>
      adminQuery(
        `INSERT INTO "${schema}".mnemo_accesses (record_id, accessed_at)
         SELECT $1, $2::bigint + g FROM generate_series($3::int, $4::int) AS g`,
        [id, at(0), from, to],
      );
    await logAccesses(1, ACCESS_FOLD_ROWS - 1);
    const below = open(schema);
    await below.engine.init();
    await below.engine.close();
    expect((await inSchema(schema)).logged).toBe(ACCESS_FOLD_ROWS - 1);
    // …then one more: the next store to open folds them.
    await logAccesses(ACCESS_FOLD_ROWS, ACCESS_FOLD_ROWS);
    const second = open(schema);
    await second.engine.init();
    const last = new Date(at(ACCESS_FOLD_ROWS)).toISOString();
    expect(await counts(second.store, [id], second.clock.now())).toEqual([
      [id, ACCESS_FOLD_ROWS, last],
    ]);
    await second.engine.close();
    expect(await inSchema(schema)).toEqual({
      logged: 0,
      records: [[id, ACCESS_FOLD_ROWS, at(ACCESS_FOLD_ROWS)]],
    });
  });

  it('folds the time of the last access logged, even when it is earlier than others logged or folded before', async () => {
    const schema = newSchema();
    const first = open(schema);
    await first.engine.init();
    const { id } = await first.engine.as('agent-a').remember({ content: 'a note' });
    await first.engine.close();
    // Logs a fold's worth of accesses whose times go back by 1 ms each (a clock going back),
    // the last at `last`; the next store to open folds them at init(), and its close() waits.
    const fold = async (last: number) => {
      await adminQuery(
        `INSERT INTO "${schema}".mnemo_accesses (record_id, accessed_at)
         SELECT $1, $2::bigint - g FROM generate_series(-$3::int + 1, 0) AS g ORDER BY g`,
        [id, last, ACCESS_FOLD_ROWS],
      );
      const store = open(schema);
      await store.engine.init();
      await store.engine.close();
      return inSchema(schema);
    };
    const start = Date.parse('2026-01-01T00:00:00.000Z');
    expect(await fold(start)).toEqual({ logged: 0, records: [[id, ACCESS_FOLD_ROWS, start]] });
    // All earlier than the time folded before: the record takes the last of them.
    expect(await fold(start - 60_000)).toEqual({
      logged: 0,
      records: [[id, 2 * ACCESS_FOLD_ROWS, start - 60_000]],
    });
  });

  it('opens a schema of version 11, whose counts are in the records, and logs from then on', async () => {
    const schema = newSchema();
    const first = open(schema);
    await first.engine.init();
    const a = first.engine.as('agent-a');
    const { id } = await a.remember({ content: 'a note' });
    await first.engine.close();
    await adminQuery(`DROP TABLE "${schema}".mnemo_accesses`);
    await adminQuery(`DELETE FROM "${schema}".mnemo_migrations WHERE version >= 12`);
    await adminQuery(
      `UPDATE "${schema}".mnemo_records SET access_count = 1, last_accessed_at = $1`,
      [Date.parse('2026-01-01T00:00:01.000Z')],
    );

    const second = open(schema);
    await second.engine.init();
    second.clock.set(new Date('2026-01-01T00:00:02.000Z'));
    await second.engine.as('agent-a').recall({ query: 'note' });
    expect(await counts(second.store, [id], second.clock.now())).toEqual([
      [id, 2, '2026-01-01T00:00:02.000Z'],
    ]);
    const { rows } = await adminQuery(
      `SELECT name FROM "${schema}".mnemo_migrations WHERE version = 12`,
    );
    expect(rows).toEqual([{ name: 'access log' }]);
    expect(await inSchema(schema)).toEqual({
      logged: 1,
      records: [[id, 1, Date.parse('2026-01-01T00:00:01.000Z')]],
    });
  });
});
