import { contentHash, type MemoryHandle, planAccess } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { PLAN_OUTCOME_WEIGHT, recallPlan, rememberPlan, reportPlanOutcome } from '../src/index.js';
import { openEngine, STORES } from './fixture.js';

const steps = ['recall:lexical:limit=5', 'answer'];

/** Two chunks and a plan over them; a second, older plan for the same question as a fallback. */
async function setUp(kind: 'duckdb' | 'postgres') {
  const opened = await openEngine({ experienceMemory: true }, kind);
  const agent = opened.engine.as('agent-a');
  const one = await agent.remember({ content: 'Open Settings, then Security.', scope: 'global' });
  const two = await agent.remember({ content: 'Choose "Reset password".', scope: 'global' });
  const fallback = await rememberPlan(agent, {
    query: 'reset my password how',
    steps: ['fallback'],
    chunkIds: [two.id],
    outcomeScore: 0.8,
    scope: 'global',
  });
  opened.clock.advance(1000);
  const plan = await rememberPlan(agent, {
    query: 'how do I reset my password',
    steps,
    chunkIds: [one.id, two.id],
    outcomeScore: 0.9,
    scope: 'global',
  });
  return {
    ...opened,
    agent,
    one,
    two,
    planId: plan.id as string,
    fallbackId: fallback.id as string,
  };
}

const ask = (handle: MemoryHandle) => recallPlan(handle, { query: 'Password reset — how to?' });

describe.each(STORES)('plan lifecycle on %s', (kind) => {
  it('counts an outcome of exactly 0.5 as a success, and keeps replaying a plan whose running outcome is exactly 0.5', async () => {
    const { agent, planId, fallbackId } = await setUp(kind);
    expect(await reportPlanOutcome(agent, { planId, outcomeScore: 0.5 })).toEqual({
      planId,
      runningOutcome: 0.7,
      replays: 1,
      failures: 0,
      replayable: true,
    });
    await agent.forget({ ids: [planId] });
    // 0.5·0.2 + 0.5·0.8 is exactly 0.5.
    expect(await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 0.2 })).toEqual({
      planId: fallbackId,
      runningOutcome: 0.5,
      replays: 1,
      failures: 1,
      replayable: true,
    });
    const replayed = await ask(agent);
    expect([replayed.plan?.id, replayed.plan?.runningOutcome, replayed.retired]).toEqual([
      fallbackId,
      0.5,
      0,
    ]);
  });

  it('returns a plan with the score it was cached with beside its running outcome, replays and failures', async () => {
    const { agent, planId, fallbackId, two } = await setUp(kind);
    await agent.forget({ ids: [planId] });
    await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 0 });
    await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 1 });
    expect((await ask(agent)).plan).toEqual({
      id: fallbackId,
      query: 'reset my password how',
      steps: ['fallback'],
      chunkIds: [two.id],
      outcomeScore: 0.8,
      similarity: 1,
      // 0.5·0 + 0.5·0.8 = 0.4, then 0.5·1 + 0.5·0.4.
      runningOutcome: 0.7,
      replays: 2,
      failures: 1,
    });
  });

  it('keeps a running outcome; a plan whose running outcome falls below 0.5 is not replayed', async () => {
    const { agent, planId, fallbackId, store } = await setUp(kind);
    expect((await ask(agent)).plan?.id).toBe(planId);
    expect(await reportPlanOutcome(agent, { planId, outcomeScore: 0.3 })).toEqual({
      planId,
      runningOutcome: 0.6,
      replays: 1,
      failures: 1,
      replayable: true,
    });
    // Equally similar plans rank by running outcome: the fallback (0.8) now comes first.
    const after = await ask(agent);
    expect([after.plan?.id, after.plan?.runningOutcome]).toEqual([fallbackId, 0.8]);
    // A second poor replay: 0.5·0.2 + 0.5·0.6 = 0.4 < 0.5, the plan retires.
    const retired = await reportPlanOutcome(agent, { planId, outcomeScore: 0.2 });
    expect(retired).toMatchObject({ replays: 2, failures: 2, replayable: false });
    expect(retired.runningOutcome).toBeCloseTo(0.4, 12);
    const next = await ask(agent);
    expect([next.plan?.id, next.retired, next.stale]).toEqual([fallbackId, 1, 0]);
    await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 0 });
    const none = await ask(agent);
    expect([none.plan, none.retired, none.candidatesConsidered]).toEqual([null, 2, 2]);
    // A good report (from a caller who replayed it anyway) moves the running outcome back up.
    const good = await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 1 });
    expect(good).toMatchObject({
      runningOutcome: PLAN_OUTCOME_WEIGHT * 1 + (1 - PLAN_OUTCOME_WEIGHT) * 0.4,
      replayable: true,
    });
    expect((await ask(agent)).plan?.id).toBe(fallbackId);
    const events = (await store.readAudit({ limit: 100 })).filter((e) => e.op === 'plan_outcome');
    expect(events.map((e) => [e.recordIds, e.details])).toEqual([
      [[planId], { outcomeScore: 0.3, runningOutcome: 0.6, replays: 1, failures: 1 }],
      [
        [planId],
        { outcomeScore: 0.2, runningOutcome: retired.runningOutcome, replays: 2, failures: 2 },
      ],
      [[fallbackId], { outcomeScore: 0, runningOutcome: 0.4, replays: 1, failures: 1 }],
      [[fallbackId], { outcomeScore: 1, runningOutcome: 0.7, replays: 2, failures: 1 }],
    ]);
  });

  it('rejects bad reports with INVALID_INPUT and unknown or invisible plans with NOT_FOUND, changing nothing', async () => {
    const { engine, agent, planId, one, store } = await setUp(kind);
    const before = await store.readAudit({ limit: 100 });
    for (const input of [
      { planId, outcomeScore: Number.NaN },
      { planId, outcomeScore: 1.5 },
      { planId, outcomeScore: -0.1 },
      { planId, outcomeScore: '0.9' },
      { planId: 42, outcomeScore: 0.9 },
      { planId, outcomeScore: 0.9, extra: true },
      { planId: '', outcomeScore: 0.9 },
      null,
    ]) {
      await expect(reportPlanOutcome(agent, input as never)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    }
    const privatePlan = await rememberPlan(agent, {
      query: 'private plan query',
      steps,
      chunkIds: [],
      outcomeScore: 0.9,
    });
    const other = engine.as('agent-b');
    for (const [handle, id] of [
      [agent, 'missing-id'],
      [agent, one.id], // an ordinary record is not a plan
      [other, privatePlan.id as string], // invisible answers like missing
    ] as const) {
      await expect(
        reportPlanOutcome(handle, { planId: id, outcomeScore: 0.9 }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    }
    const events = await store.readAudit({ limit: 100 });
    expect(events.slice(0, before.length)).toEqual(before);
    expect(events.slice(before.length).map((e) => e.op)).toEqual(['remember']);
    // A caller who can see a plan may report on it.
    expect((await reportPlanOutcome(other, { planId, outcomeScore: 1 })).replays).toBe(1);
    await expect(
      reportPlanOutcome(engine.with({ experienceMemory: false }).as('agent-a'), {
        planId,
        outcomeScore: 1,
      }),
    ).rejects.toMatchObject({ code: 'EXPERIENCE_DISABLED' });
  });

  it('skips a plan whose chunks were forgotten or redacted, and returns the next valid one', async () => {
    const { agent, engine, fallbackId, one, two } = await setUp(kind);
    await agent.forget({ ids: [one.id] });
    const soft = await ask(agent);
    expect([soft.plan?.id, soft.stale, soft.candidatesConsidered]).toEqual([fallbackId, 1, 2]);
    await agent.forget({ ids: [two.id], mode: 'redact' });
    expect(await ask(agent)).toMatchObject({ plan: null, stale: 2 });
    expect((await engine.verifyAudit()).ok).toBe(true);
  });

  it('treats hard-deleted, changed and invisible chunks as stale; old plans without hashes check existence', async () => {
    const { engine, agent, one, two, clock } = await setUp(kind);
    // A chunk the caller cannot see counts as missing: agent-b sees the global
    // plan but not agent-a's private chunk.
    const secret = await agent.remember({ content: 'internal runbook step' });
    const shared = await rememberPlan(agent, {
      query: 'rotate the api keys',
      steps,
      chunkIds: [secret.id],
      outcomeScore: 0.9,
      scope: 'global',
    });
    const b = engine.as('agent-b');
    expect((await recallPlan(b, { query: 'rotate api keys' })).stale).toBe(1);
    expect((await recallPlan(agent, { query: 'rotate api keys' })).plan?.id).toBe(shared.id);

    // Changed: the chunk's id now names other content (hard delete, then import).
    const original = await agent.get(two.id);
    await agent.forget({ ids: [two.id], mode: 'hard' });
    const changed = { ...original, content: 'Choose "Change password".' };
    changed.contentHash = contentHash(changed);
    await engine.importRecords([{ record: changed, grants: [] }]);
    const result = await ask(agent);
    expect([result.plan, result.stale]).toEqual([null, 2]);

    // A plan cached before hashes were kept: every chunk must still exist.
    clock.advance(1000);
    await planAccess(agent).writePlan({
      query: 'legacy upgrade runbook',
      tokens: ['legacy', 'runbook', 'upgrade'],
      payload: {
        query: 'legacy upgrade runbook',
        signature_tokens: ['legacy', 'runbook', 'upgrade'],
        steps,
        chunk_ids: [one.id, 'never-existed'],
        outcome_score: 0.9,
      },
    });
    const legacyHit = await recallPlan(agent, { query: 'legacy upgrade runbook' });
    expect([legacyHit.plan?.id ?? null, legacyHit.stale]).toEqual([null, 1]);
    // One whose chunks are all visible is replayed, the changed one included: without hashes
    // there is nothing to compare its content with.
    const legacy = await planAccess(agent).writePlan({
      query: 'legacy rollback runbook',
      tokens: ['legacy', 'rollback', 'runbook'],
      payload: {
        query: 'legacy rollback runbook',
        signature_tokens: ['legacy', 'rollback', 'runbook'],
        steps,
        chunk_ids: [one.id, two.id],
        outcome_score: 0.9,
      },
    });
    const legacyReplay = await recallPlan(agent, { query: 'legacy rollback runbook' });
    expect([legacyReplay.plan?.id, legacyReplay.stale]).toEqual([legacy.id, 0]);
  });

  it('never checks a chunk the caller could not see when the plan was cached, even once it can', async () => {
    const { engine, agent } = await setUp(kind);
    const b = engine.as('agent-b');
    const theirs = await b.remember({ content: 'their escalation notes', scope: 'shared' });
    const plan = await rememberPlan(agent, {
      query: 'escalate a billing ticket',
      steps,
      chunkIds: [theirs.id],
      outcomeScore: 0.9,
    });
    const payload = (await agent.get(plan.id as string)).metadata.experience_plan;
    expect(payload).toMatchObject({ chunk_ids: [theirs.id], chunk_hashes: [null] });
    await b.share({ recordId: theirs.id, with: ['agent-a'] });
    expect((await agent.get(theirs.id)).id).toBe(theirs.id);
    const replay = await recallPlan(agent, { query: 'escalate billing ticket' });
    expect([replay.plan?.id, replay.stale]).toEqual([plan.id, 0]);
  });

  it('audits every replay, hit or miss, with its stale and retired counts', async () => {
    const { agent, store, one, planId, fallbackId } = await setUp(kind);
    await ask(agent);
    await agent.forget({ ids: [one.id] });
    await ask(agent);
    await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 0 });
    await reportPlanOutcome(agent, { planId: fallbackId, outcomeScore: 0 });
    await ask(agent);
    const replays = (await store.readAudit({ limit: 100 })).filter((e) => e.op === 'recall_plan');
    expect(
      replays.map((e) => [e.recordIds, e.details.hit, e.details.stale, e.details.retired]),
    ).toEqual([
      [[planId], true, 0, 0],
      [[fallbackId], true, 1, 0],
      [[], false, 1, 1],
    ]);
  });

  it('counts a replay as an access of the plan it returns only, unless read auditing is off', async () => {
    const { engine, agent, clock, one, planId, fallbackId } = await setUp(kind);
    const accesses = async () =>
      Promise.all(
        [planId, fallbackId].map(async (id) => {
          const record = await agent.get(id);
          return [record.accessCount, record.lastAccessedAt?.toISOString() ?? null];
        }),
      );
    expect(await accesses()).toEqual([
      [0, null],
      [0, null],
    ]);
    clock.advance(5_000);
    await ask(agent);
    await ask(agent);
    await recallPlan(agent, { query: 'an unrelated question about billing' });
    expect(await accesses()).toEqual([
      [2, '2026-01-01T00:00:06.000Z'],
      [0, null],
    ]);
    // The plan goes stale: the fallback is returned, and only it is counted.
    await agent.forget({ ids: [one.id] });
    clock.advance(1_000);
    await ask(agent);
    await ask(engine.with({ readAuditing: false }).as('agent-a'));
    expect(await accesses()).toEqual([
      [2, '2026-01-01T00:00:06.000Z'],
      [1, '2026-01-01T00:00:07.000Z'],
    ]);
    expect((await engine.verifyAudit()).ok).toBe(true);
  });

  it('forgets a plan like any record, and expires a plan with a TTL', async () => {
    const { agent, clock, planId, fallbackId } = await setUp(kind);
    await agent.forget({ ids: [planId] });
    expect((await ask(agent)).plan?.id).toBe(fallbackId);
    await expect(reportPlanOutcome(agent, { planId, outcomeScore: 1 })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await agent.forget({ ids: [fallbackId], mode: 'hard' });
    expect((await ask(agent)).plan).toBeNull();

    const short = await rememberPlan(agent, {
      query: 'how to reset a password',
      steps,
      chunkIds: [],
      outcomeScore: 0.9,
      ttlMs: 60_000,
    });
    expect((await agent.get(short.id as string)).expiresAt).toEqual(
      new Date(clock.now().getTime() + 60_000),
    );
    expect((await ask(agent)).plan?.id).toBe(short.id);
    clock.advance(60_000);
    expect(await ask(agent)).toMatchObject({ plan: null, candidatesConsidered: 0 });
    // Past MAX_PLAN_TTL_MS the expiry could pass the last instant a Date holds.
    for (const ttlMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '1000', 4e15 + 1, 9e15]) {
      await expect(
        rememberPlan(agent, {
          query: 'q ttl',
          steps,
          chunkIds: [],
          outcomeScore: 0.9,
          ttlMs: ttlMs as number,
        }),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { field: 'ttlMs' } });
    }
    // Refused whatever the score: a score that would not be cached does not hide bad input.
    await expect(
      rememberPlan(agent, { query: 'q ttl', steps, chunkIds: [], outcomeScore: 0.2, ttlMs: 0 }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { field: 'ttlMs' } });
    const longest = await rememberPlan(agent, {
      query: 'q ttl longest',
      steps,
      chunkIds: [],
      outcomeScore: 0.9,
      ttlMs: 4e15,
    });
    expect(longest.stored).toBe(true);
  });
});
