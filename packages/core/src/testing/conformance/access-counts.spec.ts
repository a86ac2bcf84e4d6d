import { setImmediate as nextTurn } from 'node:timers/promises';
import type { MemoryStore, Visibility } from '../../ports/memory-store.js';
import { memoryRecord } from '../memory-record.js';
import type { Harness, TestApi } from './harness.js';

const everyone = (now: Date): Visibility => ({ agentId: 'agent-a', orgId: null, now });

/** `[id, accessCount, lastAccessedAt as ISO or null]` of `ids` as the store reads them, in the order of `ids`. */
async function counts(store: MemoryStore, ids: readonly string[], now: Date) {
  const read = new Map(
    (await store.get(everyone(now), ids)).map(({ record }) => [record.id, record]),
  );
  return ids.flatMap((id) => {
    const record = read.get(id);
    return record === undefined
      ? []
      : [[id, record.accessCount, record.lastAccessedAt?.toISOString() ?? null]];
  });
}

/**
 * Access counts (`touch`) as every read sees them. Stores may keep them
 * apart from the records and fold them in later (both built-in stores log
 * them, and fold every 4,096): the counts read must be exact all along.
 */
export function accessCountsSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('access counts', () => {
    it('counts every access and keeps the time of the last one, also when the clock went back', async () => {
      const { store, engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const { id: x } = await a.remember({ content: 'apples and pears' });
      const { id: y } = await a.remember({ content: 'cherries' });
      for (let i = 0; i < 3; i += 1) {
        clock.advance(1000);
        await a.recall({ query: 'apples' });
      }
      const later = new Date('2026-03-01T00:00:00.000Z');
      const earlier = new Date('2026-02-01T00:00:00.000Z');
      await store.transaction((tx) => tx.touch([y], later));
      await store.transaction((tx) => tx.touch([y], earlier));
      expect(await counts(store, [x, y], clock.now())).toEqual([
        [x, 3, '2026-01-01T00:00:03.000Z'],
        [y, 2, earlier.toISOString()],
      ]);
      expect(
        (await a.recall({ query: 'cherries' })).hits.map((hit) => hit.record.accessCount),
      ).toEqual([2]);
    });

    it('keeps the time of the last access through folds of the log, also when the clock went back', async () => {
      const { store, engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const { id } = await a.remember({ content: 'cherries' });
      const others: string[] = [];
      for (let i = 0; i < 50; i += 1) others.push((await a.remember({ content: `note ${i}` })).id);
      // More accesses to other records than both built-in stores log before they fold the log
      // (4,096; the fold may run in the background, so here half as many again), then a read in
      // a transaction, which locks the record: after a fold holding it.
      const foldThenRead = async () => {
        for (let i = 0; i < 120; i += 1) {
          await store.transaction((tx) =>
            tx.touch(others, new Date(Date.UTC(2026, 0, 2, 0, 0, i))),
          );
        }
        await store.auditHeads();
        const read = await store.transaction((tx) => tx.get(everyone(clock.now()), [id]));
        return read.map(({ record }) => [record.accessCount, record.lastAccessedAt?.toISOString()]);
      };
      // A fold of two accesses, the last one earlier…
      await store.transaction((tx) => tx.touch([id], new Date('2026-03-01T00:00:00.000Z')));
      await store.transaction((tx) => tx.touch([id], new Date('2026-02-01T00:00:00.000Z')));
      expect(await foldThenRead()).toEqual([[2, '2026-02-01T00:00:00.000Z']]);
      // …then of one earlier than the time folded before.
      await store.transaction((tx) => tx.touch([id], new Date('2026-01-15T00:00:00.000Z')));
      expect(await foldThenRead()).toEqual([[3, '2026-01-15T00:00:00.000Z']]);
    });

    it("counts a transaction's own accesses in its reads, and only once it commits in others'", async () => {
      const { store, engine, clock } = await h.open();
      const { id } = await engine.as('agent-a').remember({ content: 'a note' });
      const at = clock.now();
      await store.transaction(async (tx) => {
        await tx.touch([id], at);
        expect((await tx.get(everyone(at), [id])).map((v) => v.record.accessCount)).toEqual([1]);
        expect((await store.get(everyone(at), [id])).map((v) => v.record.accessCount)).toEqual([0]);
        await tx.touch([id], at);
        expect(
          (await tx.list({ visibility: everyone(at), filters: {}, limit: 10 })).map(
            (v) => v.record.accessCount,
          ),
        ).toEqual([2]);
      });
      expect(await counts(store, [id], at)).toEqual([[id, 2, at.toISOString()]]);
    });

    it('reads one exact count for all records while 5,000 accesses commit, folds included', async () => {
      const { store, engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const ids: string[] = [];
      for (let i = 0; i < 50; i += 1) ids.push((await a.remember({ content: `note ${i}` })).id);
      const touches = 100;
      let committed = 0;
      let begun = 0;
      let done = false;
      const seen: number[] = [];
      let readerFailed = false;
      // Each read sees one count for all 50 records (each touch is one transaction), between
      // the touches committed when it started and those begun when it ended.
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
      })().catch((error: unknown) => {
        readerFailed = true;
        throw error;
      });
      for (let i = 0; i < touches; i += 1) {
        begun += 1;
        await store.transaction((tx) => tx.touch(ids, new Date(Date.UTC(2026, 0, 2, 0, 0, i))));
        committed += 1;
        // A store that acknowledges touches from a journal applies them to its database before
        // a read of the audit log: every tenth touch, so that folds happen meanwhile.
        if (i % 10 === 9) {
          await store.auditHeads();
          // However fast touches commit, a read begun after this point ends before the next
          // touch begins, so reads interleave with commits and folds at least ten times.
          const wanted = seen.length + 2;
          while (seen.length < wanted && !readerFailed) await nextTurn();
        }
        await nextTurn();
      }
      done = true;
      await reader;
      expect(seen.length).toBeGreaterThanOrEqual(20);
      const last = new Date(Date.UTC(2026, 0, 2, 0, 0, touches - 1)).toISOString();
      expect(await counts(store, [ids[0] as string, ids[49] as string], clock.now())).toEqual([
        [ids[0], touches, last],
        [ids[49], touches, last],
      ]);
    });

    it('drops the accesses of a record deleted for good: one imported later under its id has its own count', async () => {
      const { store, engine, clock } = await h.open();
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
    });
  });
}
