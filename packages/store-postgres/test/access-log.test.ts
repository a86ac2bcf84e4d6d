import { createEngine, type MemoryStore, type Visibility } from '@mnemo/core';
import { createManualClock, createSequentialIds, memoryRecord } from '@mnemo/core/testing';
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
  const store = createPostgresStore({ connectionString: PG_URL, schema, maxConnections: 4 });
  cleanup.push(() => store.close());
  const clock = createManualClock('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock, ids: createSequentialIds() });
  return { store, engine, clock };
}

const everyone = (now: Date): Visibility => ({ agentId: 'agent-a', orgId: null, now });

/** `[id, accessCount, lastAccessedAt as ISO or null]` of `ids`, as the store reads them, in the order of `ids`. */
async function counts(store: MemoryStore, ids: readonly string[], now: Date) {
  const read = new Map(
    (await store.get(everyone(now), ids)).map(({ record }) => [record.id, record]),
  );
  return ids.flatMap((id) => {
    const record = read.get(id);
    return record === undefined
      ? []
      : [[record.id, record.accessCount, record.lastAccessedAt?.toISOString() ?? null]];
  });
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

  it(`folds the log once a process has logged ${ACCESS_FOLD_ROWS} accesses, and no read sees a count the commits did not make`, async () => {
    const schema = newSchema();
    const { store, engine, clock } = open(schema);
    await engine.init();
    const a = engine.as('agent-a');
    const ids: string[] = [];
    for (let i = 0; i < 50; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
    const touches = Math.ceil(ACCESS_FOLD_ROWS / 50) + 10;
    let committed = 0;
    let begun = 0;
    let done = false;
    const seen: number[] = [];
    // Reads run all along, the fold's included: each sees one count for all 50 records,
    // between the touches committed when it started and those begun when it ended.
    const reader = (async () => {
      while (!done) {
        const before = committed;
        const read = await store.get(everyone(clock.now()), ids);
        const after = begun;
        const values = new Set(read.map(({ record }) => record.accessCount));
        expect([read.length, values.size]).toEqual([50, 1]);
        const [count] = [...values] as [number];
        expect(count).toBeGreaterThanOrEqual(before);
        expect(count).toBeLessThanOrEqual(after);
        seen.push(count);
      }
    })();
    for (let i = 0; i < touches; i += 1) {
      begun += 1;
      await store.transaction((tx) => tx.touch(ids, new Date(Date.UTC(2026, 0, 2, 0, 0, i))));
      committed += 1;
    }
    done = true;
    await reader;
    expect(seen.length).toBeGreaterThan(10);
    const last = new Date(Date.UTC(2026, 0, 2, 0, 0, touches - 1)).toISOString();
    expect(await counts(store, ids.slice(0, 2), clock.now())).toEqual([
      [ids[0], touches, last],
      [ids[1], touches, last],
    ]);
    await engine.close();
    // The fold ran (close waits for it) once the log reached ACCESS_FOLD_ROWS rows, while
    // later touches went on: what it moved is in the records, the rest still logged.
    const after = await inSchema(schema);
    const folded = new Set(after.records.map(([, c]) => c));
    expect(folded.size).toBe(1);
    const [inRecords] = [...folded] as [number];
    expect(inRecords).toBeGreaterThanOrEqual(Math.ceil(ACCESS_FOLD_ROWS / 50));
    expect(after.logged).toBe((touches - inRecords) * 50);
  });

  it('keeps the time of the last access, also when the clock went back', async () => {
    const schema = newSchema();
    const { store, engine } = open(schema);
    await engine.init();
    const { id } = await engine.as('agent-a').remember({ content: 'a note' });
    const later = new Date('2026-03-01T00:00:00.000Z');
    const earlier = new Date('2026-02-01T00:00:00.000Z');
    await store.transaction((tx) => tx.touch([id], later));
    await store.transaction((tx) => tx.touch([id], earlier));
    expect(await counts(store, [id], later)).toEqual([[id, 2, earlier.toISOString()]]);
  });

  it("counts a transaction's own accesses in its reads, and only once it commits in others'", async () => {
    const schema = newSchema();
    const { store, engine, clock } = open(schema);
    await engine.init();
    const { id } = await engine.as('agent-a').remember({ content: 'a note' });
    const at = clock.now();
    await store.transaction(async (tx) => {
      await tx.touch([id], at);
      expect((await tx.get(everyone(at), [id])).map((v) => v.record.accessCount)).toEqual([1]);
      expect((await store.get(everyone(at), [id])).map((v) => v.record.accessCount)).toEqual([0]);
      await tx.touch([id, id], at);
      expect(
        (await tx.list({ visibility: everyone(at), filters: {}, limit: 10 })).map(
          (v) => v.record.accessCount,
        ),
      ).toEqual([2]);
    });
    expect(await counts(store, [id], at)).toEqual([[id, 2, at.toISOString()]]);
  });

  it('forgets the logged accesses of a record deleted for good: one imported later under its id has its own count', async () => {
    const schema = newSchema();
    const { store, engine, clock } = open(schema);
    await engine.init();
    const a = engine.as('agent-a');
    const { id } = await a.remember({ content: 'a note' });
    await a.recall({ query: 'note' });
    await a.recall({ query: 'note' });
    await a.forget({ ids: [id], mode: 'hard' });
    expect((await inSchema(schema)).logged).toBe(0);
    const imported = memoryRecord({ id, agentId: 'agent-a', content: 'a note', accessCount: 5 });
    await store.transaction((tx) =>
      tx.insertRecords([
        {
          record: imported,
          dedupKey: 'k',
          isPlan: false,
          terms: [],
          docLength: 0,
          planTokens: null,
        },
      ]),
    );
    expect(await counts(store, [id], clock.now())).toEqual([[id, 5, null]]);
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
