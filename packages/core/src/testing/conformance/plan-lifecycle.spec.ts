import { appendAuditEntries } from '../../audit/append-audit.js';
import { createEngine } from '../../engine/create-engine.js';
import type { MemoryHandle } from '../../engine/memory-handle.js';
import { planAccess } from '../../engine/plan-access.js';
import type { PlanStats } from '../../ports/memory-store.js';
import { type Harness, racedBy, replacing, type TestApi } from './harness.js';

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

    it('plan stats verify as their events recorded them: reports by two agents, forgets, a backup restored, and reports after it', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const { id } = await writer(a)(['alpha', 'beta'], { scope: 'global' });
      const soft = await writer(a)(['gamma']);
      const redacted = await writer(a)(['delta']);
      for (const [handle, score] of [
        [a, 0.9],
        [b, 0.3],
        [a, 0.6],
      ] as const) {
        clock.advance(1000);
        await planAccess(handle).updatePlanStats(id, replay(score));
      }
      for (const plan of [soft.id, redacted.id])
        await planAccess(a).updatePlanStats(plan, replay(0.8));
      await a.forget({ ids: [soft.id] });
      await a.forget({ ids: [redacted.id], mode: 'redact' });
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 3, problems: [] });

      const backup = [];
      for await (const item of engine.exportRecords()) if (item.record.id === id) backup.push(item);
      expect(backup[0]?.planStats?.replays).toBe(3);
      clock.advance(1000);
      await planAccess(b).updatePlanStats(id, replay(0.1));
      await a.forget({ ids: [id], mode: 'hard' });
      expect(await engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      const imported = (await store.readAudit({ limit: 100 })).filter((e) => e.op === 'import');
      expect(imported.map((event) => event.details.planStats)).toEqual([
        {
          runningOutcome: 0.6,
          replays: 3,
          failures: 1,
          updatedAt: backup[0]?.planStats?.updatedAt.toISOString(),
        },
      ]);
      // agent-b's fourth report went with the hard forget: the restored stats count three.
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 3, problems: [] });
      clock.advance(1000);
      await planAccess(b).updatePlanStats(id, replay(0.7));
      expect((await store.listPlanStats([id]))[0]?.replays).toBe(4);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 3, problems: [] });
    });

    it('verifies plan stats an agent reported in the millisecond a backup of the plan was restored', async () => {
      const { engine, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const { id } = await writer(a)(['alpha', 'beta'], { scope: 'global' });
      await planAccess(a).updatePlanStats(id, replay(0.9));
      const backup = [];
      for await (const item of engine.exportRecords()) backup.push(item);
      clock.advance(1000);
      // Restored, then reported by another agent, all within one millisecond.
      await a.forget({ ids: [id], mode: 'hard' });
      expect(await engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      await planAccess(b).updatePlanStats(id, replay(0.7));
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
    });

    it("verifies a plan forgotten by its owner while another agent's report held it (the forget read its clock first)", async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const { id } = await writer(a)(['alpha', 'beta'], { scope: 'global' });
      await planAccess(a).updatePlanStats(id, replay(0.9));
      // agent-a's forget reads the clock, then waits while agent-b's report (later by the
      // clock) locks the plan and commits: the forget removes the stats that report wrote.
      const racing = racedBy(store, async () => {
        clock.advance(1000);
        await planAccess(b).updatePlanStats(id, replay(0.7));
      });
      const other = createEngine({ store: racing.store, clock, experienceMemory: true });
      await other.as('agent-a').forget({ ids: [id] });
      expect(racing.raced()).toBe(true);
      expect(await store.listPlanStats([id])).toEqual([]);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
    });

    it('leaves unchecked the stats of a plan reported before plan_outcome events recorded them', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const { id } = await writer(a)(['alpha', 'beta']);
      // What an earlier version wrote: the stats, and an event with only the caller's details.
      await store.transaction(async (tx) => {
        await tx.lockPlanStats(id);
        await tx.putPlanStats({
          planId: id,
          runningOutcome: 0.4,
          replays: 1,
          failures: 1,
          updatedAt: clock.now(),
        });
        await appendAuditEntries(tx, () => 'earlier-event', a.principal, clock.now(), [
          { op: 'plan_outcome', recordIds: [id], details: { outcomeScore: 0.4 } },
        ]);
      });
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
    });

    it('verifies plan stats a report changed after the log was read, and still reports a change behind its back', async () => {
      const { engine, store } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const reported = await writer(a)(['alpha']);
      const changed = await writer(a)(['beta']);
      for (const plan of [reported.id, changed.id])
        await planAccess(a).updatePlanStats(plan, replay(0.2));
      let scans = 0;
      const watched = replacing(store, {
        scanRecords: async (options) => {
          if (scans++ === 0) {
            await planAccess(a).updatePlanStats(reported.id, replay(0.9));
            await store.transaction(async (tx) => {
              const [stats] = await store.listPlanStats([changed.id]);
              await tx.putPlanStats({ ...(stats as PlanStats), runningOutcome: 0.9 });
            });
          }
          return store.scanRecords(options);
        },
      });
      expect(await createEngine({ store: watched }).verifyRecords({ pageSize: 1 })).toEqual({
        ok: false,
        records: 2,
        problems: [
          {
            kind: 'unaudited_plan_stats',
            recordId: changed.id,
            position: 2,
            message: `plan ${changed.id}'s stats are not the ones its latest plan_outcome or import event recorded`,
          },
        ],
      });
    });

    it('lists the stats of the plans that have some, by plan id, whatever the order asked', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const plans = planAccess(engine.as('agent-a'));
      const ids: string[] = [];
      for (const token of ['one', 'two', 'three']) {
        ids.push((await plans.writePlan({ query: token, payload: {}, tokens: [token] })).id);
      }
      const [first, second, third] = ids as [string, string, string];
      await plans.updatePlanStats(third, replay(0.25));
      clock.advance(1_000);
      await plans.updatePlanStats(first, replay(0.75));
      expect(await store.listPlanStats([third, second, first, 'no-such-plan'])).toEqual([
        {
          planId: first,
          runningOutcome: 0.75,
          replays: 1,
          failures: 0,
          updatedAt: clock.now(),
        },
        {
          planId: third,
          runningOutcome: 0.25,
          replays: 1,
          failures: 1,
          updatedAt: new Date(clock.now().getTime() - 1_000),
        },
      ]);
      expect(await store.listPlanStats([])).toEqual([]);
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
      // The caller's details, with the stats added so that `verifyRecords` can check them.
      expect(events.map((e) => [e.recordIds, e.details])).toEqual([
        [[id], { outcomeScore: 0.25, runningOutcome: 0.25, replays: 1, failures: 1 }],
        [[id], { outcomeScore: 0.75, runningOutcome: 0.75, replays: 2, failures: 1 }],
      ]);
      expect((await engine.verifyAudit()).ok).toBe(true);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
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
