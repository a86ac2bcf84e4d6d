import { createEngine, type MemoryStore, type Visibility } from '@mnemo/core';
import { createManualClock, createSequentialIds, memoryRecord } from '@mnemo/core/testing';
import { describe, expect, it } from 'vitest';
import { ACCESS_FOLD_ROWS } from '../src/access-log.js';
import { createDuckDBStore } from '../src/index.js';
import { BEFORE_ACCESS_LOG, queryFile, runOnFile } from './raw-file.js';
import { useTempFolder } from './temp-folder.js';

const { file, cleanup } = useTempFolder('mnemo-duckdb-accesses-');

function open(path: string) {
  const store = createDuckDBStore({ path });
  cleanup.push(() => store.close());
  const clock = createManualClock('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock, ids: createSequentialIds() });
  return { store, engine, clock };
}

const everyone = (now: Date): Visibility => ({ agentId: 'agent-a', orgId: null, now });

/** `[id, accessCount, lastAccessedAt as ISO or null]` of `ids`, as the store reads them. */
async function counts(store: MemoryStore, ids: readonly string[], now: Date) {
  return (await store.get(everyone(now), ids)).map(({ record }) => [
    record.id,
    record.accessCount,
    record.lastAccessedAt?.toISOString() ?? null,
  ]);
}

interface FileCounts {
  logged: number;
  records: [string, number, number | null][];
}

/** What the closed file holds: rows in the access log, and each record's folded count and time. */
async function onFile(path: string): Promise<FileCounts> {
  const [{ n }] = (await queryFile<{ n: number }>(
    path,
    'SELECT count(*) AS n FROM mnemo_accesses',
  )) as [{ n: number }];
  const rows = await queryFile<{ id: string; c: number; at: number | null }>(
    path,
    'SELECT id, access_count AS c, last_accessed_at AS at FROM mnemo_records ORDER BY id',
  );
  return { logged: n, records: rows.map((r) => [r.id, r.c, r.at]) };
}

describe('DuckDB access counts, logged and folded', () => {
  it("logs a recall's accesses instead of updating the records, and counts them exactly before and after reopening", async () => {
    const path = file('log.duckdb');
    const first = open(path);
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
    await first.engine.close();
    // Seven accesses logged; the records themselves untouched.
    expect(await onFile(path)).toEqual({
      logged: 7,
      records: [
        [x, 0, null],
        [y, 0, null],
        [z, 0, null],
      ],
    });

    // Opening the file folds the log into the records (as after a crash, where it is all there is).
    const second = open(path);
    await second.engine.init();
    expect(await counts(second.store, [x, y, z], second.clock.now())).toEqual(expected);
    await second.engine.close();
    expect(await onFile(path)).toEqual({
      logged: 0,
      records: [
        [x, 3, Date.parse('2026-01-01T00:00:03.000Z')],
        [y, 3, Date.parse('2026-01-01T00:00:03.000Z')],
        [z, 1, Date.parse('2026-01-01T00:00:04.000Z')],
      ],
    });
  });

  it(`folds the log once it holds ${ACCESS_FOLD_ROWS} rows`, async () => {
    const path = file('fold.duckdb');
    const { store, engine } = open(path);
    await engine.init();
    const a = engine.as('agent-a');
    // 64 records: ACCESS_FOLD_ROWS is a multiple of it, so one touch brings the log to it exactly.
    const ids: string[] = [];
    for (let i = 0; i < 64; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
    const touches = ACCESS_FOLD_ROWS / 64 + 10;
    // (That reads stay exact meanwhile, the fold's included, is in the conformance suite.)
    for (let i = 0; i < touches; i += 1) {
      await store.transaction((tx) => tx.touch(ids, new Date(Date.UTC(2026, 0, 2, 0, 0, i))));
      // A read of the audit log applies the journaled touch to the file (see "Journal").
      await store.auditHeads();
    }
    await engine.close();
    // Folded once, after the touch that brought the log to ACCESS_FOLD_ROWS rows.
    const folded = ACCESS_FOLD_ROWS / 64;
    const folds = await onFile(path);
    expect(folds.logged).toBe((touches - folded) * 64);
    expect(new Set(folds.records.map(([, c]) => c))).toEqual(new Set([folded]));
  });

  it('counts exactly when the log is folded while later touches are still in the journal', async () => {
    const path = file('fold-journal.duckdb');
    const { store, engine } = open(path);
    await engine.init();
    const a = engine.as('agent-a');
    const ids: string[] = [];
    for (let i = 0; i < 50; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
    const touches = Math.ceil(ACCESS_FOLD_ROWS / 50) * 2;
    const at = (i: number) => new Date(Date.UTC(2026, 0, 2, 0, 0, i));
    for (let i = 0; i < touches; i += 1) {
      const touched = store.transaction((tx) => tx.touch(ids, at(i)));
      // Every tenth touch, a read of the audit log applies the frames journaled so far, which
      // queues a fold once the log is full; the touches after it are journaled meanwhile.
      if (i % 10 === 9) await Promise.all([touched, store.auditHeads()]);
      else await touched;
    }
    const expected = ids.map((id) => [id, touches, at(touches - 1).toISOString()]);
    expect(await counts(store, ids, at(touches))).toEqual(expected);
    await engine.close();
    const folded = await onFile(path);
    const foldedCounts = new Set(folded.records.map(([, c]) => c));
    const [count = 0] = foldedCounts;
    expect([foldedCounts.size, count !== 0]).toEqual([1, true]);
    expect(folded.logged).toBe((touches - count) * 50);
    const reopened = open(path);
    await reopened.engine.init();
    expect(await counts(reopened.store, ids, at(touches))).toEqual(expected);
  });

  it('keeps the time of the last access, also when the clock went back', async () => {
    const path = file('clock.duckdb');
    const first = open(path);
    await first.engine.init();
    const { id } = await first.engine.as('agent-a').remember({ content: 'a note' });
    const later = new Date('2026-03-01T00:00:00.000Z');
    const earlier = new Date('2026-02-01T00:00:00.000Z');
    await first.store.transaction((tx) => tx.touch([id], later));
    await first.store.transaction((tx) => tx.touch([id], earlier));
    const expected = [[id, 2, earlier.toISOString()]];
    expect(await counts(first.store, [id], later)).toEqual(expected);
    await first.engine.close();
    const second = open(path);
    await second.engine.init();
    expect(await counts(second.store, [id], later)).toEqual(expected);
  });

  it('forgets the pending accesses of a record deleted for good: one imported later under its id has its own count', async () => {
    const path = file('hard.duckdb');
    const { store, engine, clock } = open(path);
    await engine.init();
    const a = engine.as('agent-a');
    const { id } = await a.remember({ content: 'a note' });
    await a.recall({ query: 'note' });
    await a.recall({ query: 'note' });
    await a.forget({ ids: [id], mode: 'hard' });
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
    await engine.close();
    expect((await onFile(path)).logged).toBe(0);
  });

  it('opens a file of schema version 8, whose counts are in the records, and logs from then on', async () => {
    const path = file('v8.duckdb');
    const first = open(path);
    await first.engine.init();
    const a = first.engine.as('agent-a');
    const { id } = await a.remember({ content: 'a note' });
    first.clock.advance(1000);
    await a.recall({ query: 'note' });
    await first.engine.close();
    await runOnFile(path, BEFORE_ACCESS_LOG);
    expect(
      await queryFile(
        path,
        "SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'mnemo_accesses'",
      ),
    ).toEqual([{ n: 0 }]);
    expect(
      await queryFile(path, 'SELECT access_count AS c, last_accessed_at AS at FROM mnemo_records'),
    ).toEqual([{ c: 1, at: Date.parse('2026-01-01T00:00:01.000Z') }]);

    const second = open(path);
    await second.engine.init();
    second.clock.set(new Date('2026-01-01T00:00:02.000Z'));
    await second.engine.as('agent-a').recall({ query: 'note' });
    expect(await counts(second.store, [id], second.clock.now())).toEqual([
      [id, 2, '2026-01-01T00:00:02.000Z'],
    ]);
    await second.engine.close();
    expect(
      await queryFile(path, 'SELECT version, name FROM mnemo_migrations WHERE version = 9'),
    ).toEqual([{ version: 9, name: 'access log' }]);
    expect(await onFile(path)).toEqual({
      logged: 1,
      records: [[id, 1, Date.parse('2026-01-01T00:00:01.000Z')]],
    });
  });
});
