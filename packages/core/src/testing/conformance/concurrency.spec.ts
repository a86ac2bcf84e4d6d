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
  });
}
