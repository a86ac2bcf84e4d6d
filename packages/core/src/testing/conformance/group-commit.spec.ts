import { createEngine } from '../../engine/create-engine.js';
import { planAccess } from '../../engine/plan-access.js';
import type { MemoryStore, StoreTx } from '../../ports/memory-store.js';
import { createSequentialIds } from '../sequential-ids.js';
import type { Harness, TestApi } from './harness.js';

/** The real store, counting transactions and failing any insert of a record whose content is `poison`. */
function faulty(store: MemoryStore): MemoryStore & { transactions: number } {
  const wrapper = Object.create(store) as MemoryStore & { transactions: number };
  wrapper.transactions = 0;
  wrapper.transaction = <T>(fn: (tx: StoreTx) => Promise<T>) => {
    wrapper.transactions += 1;
    return store.transaction((tx) =>
      fn({
        ...tx,
        insertRecords: async (records) => {
          if (records.some(({ record }) => record.content === 'poison'))
            throw new Error('injected failure');
          return tx.insertRecords(records);
        },
      }),
    );
  };
  return wrapper;
}

export function groupCommitSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('group commit', () => {
    it('writes concurrent remembers in shared transactions, chained and deduplicated in call order', async () => {
      const { store, clock } = await h.open();
      const counted = faulty(store);
      const engine = createEngine({ store: counted, clock, ids: createSequentialIds('g-') });
      const agents = ['a1', 'a2', 'a3', 'a4'].map((id) => engine.as(id));
      const calls = Array.from({ length: 32 }, (_, i) =>
        (agents[i % 4] as (typeof agents)[number]).remember({ content: `note ${i % 16}` }),
      );
      const results = await Promise.all(calls);
      // All 32 were called in the same turn of the event loop: one transaction holds them.
      expect(counted.transactions).toBe(1);
      for (let i = 16; i < 32; i += 1) {
        expect(results[i]).toEqual({ ...results[i - 16], deduplicated: true });
      }
      expect(results.slice(0, 16).every((r) => !r.deduplicated)).toBe(true);
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events]).toEqual([true, 16]);
      const events = await store.readAudit({ limit: 100 });
      for (const agent of ['a1', 'a2', 'a3', 'a4']) {
        const mine = events
          .filter((event) => event.chain === agent)
          .map((event) => event.recordIds[0]);
        const expected = results
          .slice(0, 16)
          .filter((_, i) => `a${(i % 4) + 1}` === agent)
          .map((r) => r.id);
        expect(mine).toEqual(expected);
      }
    });

    it('never answers a caller with a record of its group that has expired by then', async () => {
      const { store, clock } = await h.open();
      const counted = faulty(store);
      const engine = createEngine({ store: counted, clock, ids: createSequentialIds('x-') });
      const a = engine.as('agent-a');
      const expiring = a.remember({
        content: 'the same note',
        expiresAt: new Date(clock.now().getTime() + 10),
      });
      clock.advance(20);
      // Called once the first record has expired, in the same group: a record of its own.
      const later = a.remember({ content: 'the same note' });
      const [first, second] = await Promise.all([expiring, later]);
      expect(counted.transactions).toBe(1);
      expect(second.deduplicated).toBe(false);
      expect(second.id).not.toBe(first.id);
      expect((await a.get(second.id)).content).toBe('the same note');
      // Within its time, a record of the group is one: the third remember gets the second's id.
      const [third, fourth] = await Promise.all([
        a.remember({ content: 'another note' }),
        a.remember({ content: 'another note' }),
      ]);
      expect(fourth).toEqual({ ...third, deduplicated: true });
    });

    it('stamps each event of a group with the time of its own call', async () => {
      const { store, clock } = await h.open();
      const counted = faulty(store);
      const engine = createEngine({ store: counted, clock, ids: createSequentialIds('t-') });
      const a = engine.as('agent-a');
      const first = a.remember({ content: 'first, at the start' });
      clock.advance(60_000);
      const second = a.remember({ content: 'second, a minute later' });
      const ids = (await Promise.all([first, second])).map((r) => r.id);
      expect(counted.transactions).toBe(1);
      const records = await Promise.all(ids.map((id) => a.get(id)));
      const events = await store.readAudit({ limit: 10 });
      expect(events.map((event) => [event.recordIds[0], event.at])).toEqual(
        records.map((record) => [record.id, record.createdAt]),
      );
      expect(
        records.map((r) => r.createdAt.getTime() - (records[0] as typeof r).createdAt.getTime()),
      ).toEqual([0, 60_000]);
      expect((await engine.verifyAudit()).ok).toBe(true);
    });

    it('fails only the bad write of a group; the others commit', async () => {
      const { store, clock } = await h.open();
      const counted = faulty(store);
      const engine = createEngine({ store: counted, clock, ids: createSequentialIds('g-') });
      const agent = engine.as('agent-a');
      const first = await agent.remember({ content: 'first, alone' });
      const rest = Array.from({ length: 10 }, (_, i) =>
        agent.remember({ content: i === 4 ? 'poison' : `good ${i}` }),
      );
      const settled = [{ status: 'fulfilled', value: first }, ...(await Promise.allSettled(rest))];
      expect(settled.map((s) => s.status)).toEqual([
        'fulfilled',
        ...Array.from({ length: 10 }, (_, i) => (i === 4 ? 'rejected' : 'fulfilled')),
      ]);
      expect((settled[5] as PromiseRejectedResult).reason).toMatchObject({
        message: 'injected failure',
      });
      // first alone, the group of ten (rolled back), then halves until the bad write is alone:
      // 0–4 (rolled back), 0–2, 3–4 (rolled back), 3, 4 (fails), 5–9.
      expect(counted.transactions).toBe(8);
      const listed = await store.list({
        visibility: { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') },
        filters: {},
      });
      expect(listed.map((v) => v.record.content).sort()).toEqual(
        [
          'first, alone',
          ...Array.from({ length: 10 }, (_, i) => `good ${i}`).filter((_, i) => i !== 4),
        ].sort(),
      );
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events]).toEqual([true, 10]);
    });

    it('treats a record of its group expiring exactly at the group time as expired', async () => {
      const { store, clock } = await h.open();
      const counted = faulty(store);
      const engine = createEngine({ store: counted, clock, ids: createSequentialIds('e-') });
      const a = engine.as('agent-a');
      const expiring = a.remember({
        content: 'the same note',
        expiresAt: new Date(clock.now().getTime() + 10),
      });
      // Expired at this instant, as a TTL read, a dedup against the store and purgeExpired see it.
      clock.advance(10);
      const later = a.remember({ content: 'the same note' });
      const [first, second] = await Promise.all([expiring, later]);
      expect(counted.transactions).toBe(1);
      expect([first.deduplicated, second.deduplicated]).toEqual([false, false]);
      expect(second.id).not.toBe(first.id);
    });

    it('records in each remember event whether it wrote a plan', async () => {
      const { engine, store } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const [note, plan] = await Promise.all([
        a.remember({ content: 'a plain note' }),
        planAccess(a).writePlan({
          query: 'how to x',
          payload: { signature_tokens: ['how'] },
          tokens: ['how'],
        }),
      ]);
      const events = await store.readAudit({ limit: 10 });
      // A plan is a procedural record tagged as one: in the log, only this flag tells it from a note.
      expect(events.map((event) => [event.op, event.recordIds, event.details.plan])).toEqual([
        ['remember', [note.id], false],
        ['remember', [plan.id], true],
      ]);
    });
  });
}
