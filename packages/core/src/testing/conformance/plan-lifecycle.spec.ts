import type { MemoryHandle } from '../../engine/memory-handle.js';
import { planAccess } from '../../engine/plan-access.js';
import type { PlanStats } from '../../ports/memory-store.js';
import type { Harness, TestApi } from './harness.js';

/** A stats update that counts one replay and moves the running outcome to `score`. */
const replay = (score: number) => (_plan: unknown, current: PlanStats | null) => ({
  runningOutcome: score,
  replays: (current?.replays ?? 0) + 1,
  failures: (current?.failures ?? 0) + (score < 0.5 ? 1 : 0),
  details: { outcomeScore: score },
});

function writer(handle: MemoryHandle) {
  return (tokens: string[], options: { scope?: 'private' | 'global'; ttlMs?: number } = {}) =>
    planAccess(handle).writePlan({
      query: tokens.join(' '),
      payload: { tokens },
      tokens,
      ...options,
    });
}

export function planLifecycleSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('plan lifecycle', () => {
    it('finds exactly the plans sharing minShared tokens, probing the rarest', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const write = writer(a);
      // 'common' is in every plan; 'rare' in one: a probe must not miss plans lacking 'rare'.
      const ids: string[] = [];
      for (let i = 0; i < 12; i += 1)
        ids.push((await write(['common', `w${i}`, i % 2 === 0 ? 'even' : 'odd'])).id);
      const both = await write(['common', 'even', 'rare']);
      const find = async (tokens: string[], minShared: number) =>
        (await planAccess(a).findCandidates({ tokens, minTokens: 1, maxTokens: 10, minShared }))
          .map((c) => c.record.id)
          .sort();
      expect(await find(['common', 'even', 'rare'], 3)).toEqual([both.id]);
      expect(await find(['common', 'even', 'rare'], 2)).toEqual(
        [...ids.filter((_, i) => i % 2 === 0), both.id].sort(),
      );
      expect(await find(['common', 'w3', 'odd'], 3)).toEqual([ids[3]]);
      expect(await find(['rare', 'nothing'], 2)).toEqual([]);
      expect((await find(['common'], 1)).length).toBe(13);
      // Default 1: any shared token.
      const all = await planAccess(a).findCandidates({
        tokens: ['rare', 'w0'],
        minTokens: 1,
        maxTokens: 10,
      });
      expect(all.map((c) => c.record.id).sort()).toEqual([ids[0], both.id].sort());
    });

    it('keeps plan stats beside the plan, with a plan_outcome event in the same transaction', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const { id } = await writer(a)(['alpha', 'beta']);
      const record = await a.get(id);
      const find = () =>
        planAccess(a).findCandidates({ tokens: ['alpha'], minTokens: 1, maxTokens: 5 });
      expect((await find())[0]?.stats).toBeNull();
      clock.advance(1000);
      const first = await planAccess(a).updatePlanStats(id, replay(0.25));
      expect(first).toEqual({
        planId: id,
        runningOutcome: 0.25,
        replays: 1,
        failures: 1,
        updatedAt: clock.now(),
      });
      await planAccess(a).updatePlanStats(id, replay(0.75));
      const [candidate] = await find();
      expect(candidate?.stats).toEqual({ ...first, runningOutcome: 0.75, replays: 2 });
      // The record itself (and so its hash) is untouched.
      expect(await a.get(id)).toEqual(record);
      const events = (await store.readAudit({ limit: 10 })).filter((e) => e.op === 'plan_outcome');
      expect(events.map((e) => [e.recordIds, e.details])).toEqual([
        [[id], { outcomeScore: 0.25 }],
        [[id], { outcomeScore: 0.75 }],
      ]);
      expect((await engine.verifyAudit()).ok).toBe(true);
    });

    it('loses no update when outcomes of one plan are reported at once', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const { id } = await writer(a)(['alpha']);
      await Promise.all(
        Array.from({ length: 8 }, () => planAccess(a).updatePlanStats(id, replay(0.9))),
      );
      const [candidate] = await planAccess(a).findCandidates({
        tokens: ['alpha'],
        minTokens: 1,
        maxTokens: 1,
      });
      expect(candidate?.stats?.replays).toBe(8);
    });

    it('updates only a visible plan: missing, invisible and non-plan ids are NOT_FOUND, nothing written', async () => {
      const { engine, store } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const { id } = await writer(a)(['alpha']);
      const global = await writer(a)(['beta'], { scope: 'global' });
      const ordinary = await a.remember({ content: 'not a plan' });
      const before = await store.readAudit({ limit: 100 });
      for (const [handle, target] of [
        [b, id],
        [a, 'no-such-id'],
        [a, ordinary.id],
      ] as const) {
        await expect(planAccess(handle).updatePlanStats(target, replay(1))).rejects.toMatchObject({
          code: 'NOT_FOUND',
        });
      }
      await expect(
        planAccess(a).updatePlanStats(id, () => ({
          runningOutcome: Number.NaN,
          replays: 1,
          failures: 0,
          details: {},
        })),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await store.readAudit({ limit: 100 })).toEqual(before);
      // Anyone who can see a plan may update it.
      expect((await planAccess(b).updatePlanStats(global.id, replay(1))).replays).toBe(1);
    });

    it('drops forgotten, redacted and expired plans from lookup', async () => {
      const { engine, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const write = writer(a);
      const soft = await write(['alpha', 'one']);
      const hard = await write(['alpha', 'two']);
      const redacted = await write(['alpha', 'three']);
      const expiring = await write(['alpha', 'four'], { ttlMs: 60_000 });
      const kept = await write(['alpha', 'five']);
      await planAccess(a).updatePlanStats(hard.id, replay(1));
      const find = async () =>
        (await planAccess(a).findCandidates({ tokens: ['alpha'], minTokens: 1, maxTokens: 5 }))
          .map((c) => c.record.id)
          .sort();
      expect(await find()).toEqual([soft.id, hard.id, redacted.id, expiring.id, kept.id]);
      await a.forget({ ids: [soft.id] });
      await a.forget({ ids: [hard.id], mode: 'hard' });
      await a.forget({ ids: [redacted.id], mode: 'redact' });
      expect(await find()).toEqual([expiring.id, kept.id]);
      clock.advance(60_000);
      expect(await find()).toEqual([kept.id]);
      await expect(
        planAccess(a).writePlan({ query: 'q', payload: {}, tokens: ['q'], ttlMs: 0 }),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    });

    it('keeps lookup in step with rolled-back writes', async () => {
      const { engine, store } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const { id } = await writer(a)(['alpha']);
      await expect(
        store.transaction(async (tx) => {
          await tx.deleteRecords([id], 'hard', new Date('2026-01-01T00:00:01Z'));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      const found = await planAccess(a).findCandidates({
        tokens: ['alpha'],
        minTokens: 1,
        maxTokens: 1,
      });
      expect(found.map((c) => c.record.id)).toEqual([id]);
    });
  });
}
