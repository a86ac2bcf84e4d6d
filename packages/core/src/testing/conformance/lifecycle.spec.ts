import { chainEvent } from '../../audit/audit-event.js';
import type { NewRecord } from '../../ports/memory-store.js';
import type { MemoryRecord } from '../../records.js';
import { memoryRecord } from '../memory-record.js';
import type { ConformanceOptions, Harness, TestApi } from './harness.js';

export function lifecycleSpec(t: TestApi, h: Harness, options: ConformanceOptions): void {
  const { describe, it, expect } = t;
  describe('lifecycle', () => {
    it('init is idempotent, close is idempotent, use after close is STORE_UNAVAILABLE', async () => {
      const { engine, store } = await h.open();
      await store.init();
      await engine.as('agent-a').remember({ content: 'before close' });
      await store.close();
      await store.close();
      await expect(engine.as('agent-a').remember({ content: 'after close' })).rejects.toMatchObject(
        { code: 'STORE_UNAVAILABLE' },
      );
      await expect(engine.as('agent-a').recall({ query: 'close' })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
      await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    });

    it('a store used before init is STORE_UNAVAILABLE', async () => {
      const store = await options.createStore();
      try {
        await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        await expect(store.transaction(async () => 1)).rejects.toMatchObject({
          code: 'STORE_UNAVAILABLE',
        });
      } finally {
        await store.close();
        await options.destroyStore?.(store);
      }
    });

    it('rolls a transaction back when its callback throws', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      await a.remember({ content: 'kept' });
      const before = await store.readAudit({ limit: 10 });
      await expect(
        store.transaction(async (tx) => {
          await tx.touch(['id-000001'], new Date('2026-06-01'));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await store.readAudit({ limit: 10 })).toEqual(before);
      expect((await a.get('id-000001')).accessCount).toBe(0);
    });

    it('rolls back an audit append too: the next event chains onto the head before it', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      await a.remember({ content: 'first' });
      await expect(
        store.transaction(async (tx) => {
          const event = chainEvent(await tx.auditHead('agent-a'), {
            id: 'phantom',
            chain: 'agent-a',
            at: clock.now(),
            principal: 'agent-a',
            op: 'remember',
            recordIds: [],
            details: {},
          });
          await tx.appendAudit([event]);
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      await a.remember({ content: 'second' });
      expect([
        (await engine.verifyAudit()).ok,
        (await store.readAudit({ limit: 10 })).map((event) => event.seq),
      ]).toEqual([true, [1, 2]]);
    });

    it("finds live duplicates among the transaction's own inserts, and not deleted or expired ones", async () => {
      const { engine, store, clock } = await h.open();
      // A remember first, so that a store that loads what it knows of its records on the
      // first write has done so before the transaction below.
      await engine.as('agent-a').remember({ content: 'first' });
      const now = clock.now();
      const inserted = (id: string, fields: Partial<MemoryRecord> = {}): NewRecord => ({
        record: memoryRecord({ id, content: id, createdAt: now, updatedAt: now, ...fields }),
        dedupKey: `key-${id}`,
        isPlan: false,
        terms: [],
        docLength: 0,
        planTokens: null,
      });
      const rows = [
        inserted('live'),
        inserted('deleted', { deletedAt: now }),
        inserted('expired', { expiresAt: now }),
      ];
      const keys = ['key-live', 'key-deleted', 'key-expired', 'key-none'];
      const found = await store.transaction(async (tx) => {
        await tx.insertRecords(rows);
        return tx.findLiveDuplicates(keys, now);
      });
      const live = { id: 'live', contentHash: rows[0]?.record.contentHash };
      expect([...found]).toEqual([['key-live', live]]);
      const after = await store.transaction((tx) => tx.findLiveDuplicates(keys, now));
      expect([...after]).toEqual([['key-live', live]]);
    });
  });
}
