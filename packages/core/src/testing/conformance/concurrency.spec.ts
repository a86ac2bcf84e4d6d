import type { Harness, TestApi } from './harness.js';

export function concurrencySpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('concurrency', () => {
    it('lands every one of many concurrent writes and keeps every chain valid', async () => {
      const { engine, store } = await h.open();
      const agents = ['a1', 'a2', 'a3', 'a4'].map((id) => engine.as(id));
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => {
          const agent = agents[i % 4];
          if (agent === undefined) throw new Error('unreachable');
          return i % 10 === 9
            ? agent.recall({ query: `note ${i - 1}` })
            : agent.remember({ content: `note ${i}`, scope: 'global' });
        }),
      );
      const remembered = results.filter((r) => 'id' in r);
      expect(remembered).toHaveLength(180);
      const listed = await store.list({
        visibility: { agentId: 'a1', orgId: null, now: new Date('2030-01-01') },
        filters: {},
      });
      expect(listed).toHaveLength(180);
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events, verification.chains]).toEqual([true, 200, 4]);
      expect(verification.heads.map((head) => head.seq)).toEqual([50, 50, 50, 50]);
      expect((await engine.verifyRecords()).problems).toEqual([]);
    });

    it('runs overlapping calls on one transaction one after another, and rolls them all back', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const { id: x } = await a.remember({ content: 'x note' });
      const { id: y } = await a.remember({ content: 'y note' });
      const at = clock.now();
      await store.transaction((tx) => tx.touch([x], at));
      await store.transaction((tx) => Promise.all([tx.touch([x], at), tx.touch([y], at)]));
      const visibility = { agentId: 'agent-a', orgId: null, now: clock.now() };
      const counts = async () =>
        Object.fromEntries(
          (await store.get(visibility, [x, y])).map((v) => [v.record.id, v.record.accessCount]),
        );
      expect(await counts()).toEqual({ [x]: 2, [y]: 1 });
      // A call still running when the callback fails is rolled back with the rest.
      await expect(
        store.transaction(async (tx) => {
          await Promise.all([
            tx.deleteRecords([y], 'soft', at),
            tx.touch([x], at),
            Promise.reject(new Error('a sibling failed')),
          ]);
        }),
      ).rejects.toThrow('a sibling failed');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await counts()).toEqual({ [x]: 2, [y]: 1 });
      expect((await a.recall({ query: 'note', strategy: 'lexical' })).hits).toHaveLength(2);
    });
  });
}
