import {
  contentHash,
  createEngine,
  type JsonObject,
  MnemoError,
  PLAN_TAG,
  planAccess,
} from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SIMILARITY_THRESHOLD,
  DEFAULT_SUCCESS_THRESHOLD,
  EXPERIENCE_PLAN_TAG,
  PLAN_METADATA_KEY,
  recallPlan,
  rememberPlan,
  reportPlanOutcome,
  withExperienceMemory,
} from '../src/index.js';
import { openEngine } from './fixture.js';

/** 1,000 chunk ids of record-id length that name no record. */
const LONG_CHUNK_IDS = Array.from(
  { length: 1000 },
  (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
);

const PASSWORD_PLAN = {
  query: 'how do I reset my password',
  steps: ['recall:lexical:limit=5', 'answer'],
  chunkIds: ['chunk-12', 'chunk-40'],
  outcomeScore: 0.92,
};

describe('constants', () => {
  it('are exactly the specified values', () => {
    expect([
      EXPERIENCE_PLAN_TAG,
      PLAN_METADATA_KEY,
      DEFAULT_SIMILARITY_THRESHOLD,
      DEFAULT_SUCCESS_THRESHOLD,
    ]).toEqual(['__experience_plan__', 'experience_plan', 0.7, 0.5]);
    expect(EXPERIENCE_PLAN_TAG).toBe(PLAN_TAG);
  });
});

describe('rememberPlan and recallPlan', () => {
  it('replays a cached plan for a paraphrase, and misses an unrelated query', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const stored = await rememberPlan(agent, PASSWORD_PLAN);
    expect(stored).toEqual({
      id: 'id-000001',
      signature: ['how', 'password', 'reset'],
      stored: true,
    });
    const hit = await recallPlan(agent, { query: 'Password reset — how to?' });
    expect(hit).toEqual({
      plan: {
        id: 'id-000001',
        query: 'how do I reset my password',
        steps: ['recall:lexical:limit=5', 'answer'],
        chunkIds: ['chunk-12', 'chunk-40'],
        outcomeScore: 0.92,
        similarity: 1,
        runningOutcome: 0.92,
        replays: 0,
        failures: 0,
      },
      candidatesConsidered: 1,
      stale: 0,
      retired: 0,
    });
    expect(await recallPlan(agent, { query: 'what is the capital of france' })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
  });

  it('persists the plan as a procedural record with the reserved tag and the snake_case payload', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const { id } = await rememberPlan(agent, PASSWORD_PLAN);
    const record = await agent.get(id as string);
    expect([record.content, record.memoryType, record.tags, record.scope, record.metadata]).toEqual(
      [
        'how do I reset my password',
        'procedural',
        ['__experience_plan__'],
        'private',
        {
          experience_plan: {
            query: 'how do I reset my password',
            signature_tokens: ['how', 'password', 'reset'],
            steps: ['recall:lexical:limit=5', 'answer'],
            chunk_ids: ['chunk-12', 'chunk-40'],
            outcome_score: 0.92,
            chunk_hashes: [null, null],
          },
        },
      ],
    );
  });

  it('does not cache a failed outcome: 0.30, NaN, negative', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    for (const outcomeScore of [0.3, Number.NaN, -0.5, Number.NEGATIVE_INFINITY, 0.4999]) {
      expect(await rememberPlan(agent, { ...PASSWORD_PLAN, outcomeScore })).toEqual({
        id: null,
        signature: ['how', 'password', 'reset'],
        stored: false,
        reason: 'below_success_threshold',
      });
    }
    expect(await store.readAudit({ limit: 10 })).toEqual([]);
    expect(await recallPlan(agent, { query: PASSWORD_PLAN.query })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
    expect((await rememberPlan(agent, { ...PASSWORD_PLAN, outcomeScore: 0.5 })).stored).toBe(true);
  });

  it('does not cache a plan whose query has no signature tokens', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    expect(await rememberPlan(agent, { ...PASSWORD_PLAN, query: 'to be or no' })).toEqual({
      id: null,
      signature: [],
      stored: false,
      reason: 'empty_signature',
    });
    expect(await store.readAudit({ limit: 10 })).toEqual([]);
  });

  it('is off by default: rememberPlan is EXPERIENCE_DISABLED, recallPlan misses without looking', async () => {
    const { engine, store } = await openEngine();
    const agent = engine.as('agent-a');
    expect(engine.experienceMemory).toBe(false);
    await expect(rememberPlan(agent, PASSWORD_PLAN)).rejects.toMatchObject({
      code: 'EXPERIENCE_DISABLED',
    });
    // A plan cached while the tier was on is still not replayed once it is off.
    await rememberPlan(withExperienceMemory(engine).as('agent-a'), PASSWORD_PLAN);
    expect(await recallPlan(agent, { query: PASSWORD_PLAN.query })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
    expect((await store.readAudit({ limit: 10 })).map((e) => e.op)).toEqual(['remember']);
    const on = createEngine({ store, experienceMemory: true });
    expect(on.experienceMemory).toBe(true);
    expect(withExperienceMemory(engine).experienceMemory).toBe(true);
  });

  it('says when an identical plan was cached already, which keeps its own expiry and outcomes', async () => {
    const { engine, clock } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const first = await rememberPlan(agent, { ...PASSWORD_PLAN, ttlMs: 1000 });
    expect(first).toEqual({ id: first.id, signature: first.signature, stored: true });
    const again = await rememberPlan(agent, PASSWORD_PLAN);
    expect(again).toEqual({ ...first, deduplicated: true });
    clock.advance(2000);
    // The first plan's expiry held; once it is gone, the same plan is cached anew.
    expect((await recallPlan(agent, { query: PASSWORD_PLAN.query })).plan).toBe(null);
    const anew = await rememberPlan(agent, PASSWORD_PLAN);
    expect([anew.stored, anew.deduplicated, anew.id === first.id]).toEqual([
      true,
      undefined,
      false,
    ]);
    // A retired plan stays retired when the same plan is cached again.
    await reportPlanOutcome(agent, { planId: anew.id as string, outcomeScore: 0 });
    expect((await rememberPlan(agent, PASSWORD_PLAN)).deduplicated).toBe(true);
    expect(await recallPlan(agent, { query: PASSWORD_PLAN.query })).toMatchObject({
      plan: null,
      retired: 1,
    });
  });

  it('applies scope and ACL to plans', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const owner = engine.as('owner');
    const grantee = engine.as('grantee');
    const other = engine.as('other');
    await rememberPlan(owner, PASSWORD_PLAN);
    expect(await recallPlan(other, { query: PASSWORD_PLAN.query })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });

    const shared = await rememberPlan(owner, {
      ...PASSWORD_PLAN,
      query: 'export my invoices to csv',
      scope: 'shared',
    });
    await owner.share({ recordId: shared.id as string, with: ['grantee'] });
    expect((await recallPlan(grantee, { query: 'export invoices csv' })).plan?.id).toBe(shared.id);
    expect(await recallPlan(other, { query: 'export invoices csv' })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });

    const open = await rememberPlan(owner, {
      ...PASSWORD_PLAN,
      query: 'delete my account forever',
      scope: 'public',
    });
    const seen = await recallPlan(other, { query: 'Delete account forever, my' });
    expect([seen.plan?.id, seen.plan?.similarity, seen.candidatesConsidered]).toEqual([
      open.id,
      1,
      1,
    ]);
  });

  it('keeps plans out of ordinary recall', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const ordinary = await agent.remember({ content: 'To reset your password open Settings' });
    await rememberPlan(agent, { ...PASSWORD_PLAN, query: 'reset password' });
    const { hits } = await agent.recall({ query: 'reset password', limit: 100 });
    expect(hits.map((hit) => hit.record.id)).toEqual([ordinary.id]);
  });

  it('treats only the tag as a plan marker, and rejects the tag from ordinary remember', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const fake = await agent.remember({
      content: 'how do I reset my password',
      metadata: {
        [PLAN_METADATA_KEY]: {
          query: 'x',
          signature_tokens: ['how', 'password', 'reset'],
          steps: [],
          chunk_ids: ['evil'],
          outcome_score: 1,
        },
      },
    });
    expect(await recallPlan(agent, { query: PASSWORD_PLAN.query })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
    expect(
      (await agent.recall({ query: 'reset password' })).hits.map((hit) => hit.record.id),
    ).toEqual([fake.id]);
    const error = await agent
      .remember({ content: 'x', tags: [EXPERIENCE_PLAN_TAG] })
      .catch((e: unknown) => e);
    expect(MnemoError.isInstance(error) && error.code).toBe('INVALID_INPUT');
  });

  it('skips a tagged record whose plan payload is malformed', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const access = planAccess(agent);
    const tokens = ['how', 'password', 'reset'];
    const valid = {
      query: PASSWORD_PLAN.query,
      signature_tokens: tokens,
      steps: ['forged'],
      chunk_ids: [],
      outcome_score: 0.9,
    };
    const malformed: JsonObject[] = [
      { ...valid, query: 42 },
      { ...valid, steps: 'forged' },
      { ...valid, steps: [1] },
      { ...valid, chunk_ids: 'chunk-1' },
      { ...valid, chunk_ids: [null] },
      { ...valid, outcome_score: '0.9' },
      // rememberPlan caches scores of 0.5 to 1 and stores none outside 0..1: such a payload was
      // written by other means, and would outrank every plan or break its running outcome.
      { ...valid, outcome_score: 1.5 },
      { ...valid, outcome_score: -0.5 },
      { ...valid, chunk_hashes: [null] },
      { ...valid, chunk_ids: ['chunk-1'], chunk_hashes: [7] },
      { ...valid, chunk_ids: ['chunk-1'], chunk_hashes: 'x' },
    ];
    for (const [index, payload] of malformed.entries()) {
      await access.writePlan({ query: `${PASSWORD_PLAN.query} ${index}`, tokens, payload });
    }
    await access.writePlan({
      query: PASSWORD_PLAN.query,
      tokens,
      payload: ['not', 'an', 'object'] as never,
    });
    expect(await recallPlan(agent, { query: PASSWORD_PLAN.query })).toEqual({
      plan: null,
      candidatesConsidered: 12,
      stale: 0,
      retired: 0,
    });
  });

  it('records a null hash for chunk ids that cannot name a record, and never checks them', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    // Blank (U+0085 too, which trim() keeps), too long, with a control character.
    const chunkIds = ['', ' ', '\u0085', ' \u0085\u3000', 'x'.repeat(257), 'line\nbreak'];
    const stored = await rememberPlan(agent, { ...PASSWORD_PLAN, chunkIds });
    expect((await agent.get(stored.id as string)).metadata[PLAN_METADATA_KEY]).toMatchObject({
      chunk_ids: chunkIds,
      chunk_hashes: [null, null, null, null, null, null],
    });
    const replay = await recallPlan(agent, { query: PASSWORD_PLAN.query });
    expect([replay.plan?.id, replay.plan?.chunkIds, replay.stale]).toEqual([
      stored.id,
      chunkIds,
      0,
    ]);
  });

  it('checks a chunk whose id is as long as a record id may be', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const { id } = await agent.remember({ content: 'Open Settings, then Security.' });
    const long = { ...(await agent.get(id)), id: 'a'.repeat(256) };
    await engine.importRecords([
      { record: { ...long, contentHash: contentHash(long) }, grants: [] },
    ]);
    const stored = await rememberPlan(agent, { ...PASSWORD_PLAN, chunkIds: [long.id] });
    expect((await agent.get(stored.id as string)).metadata[PLAN_METADATA_KEY]).toMatchObject({
      chunk_hashes: [contentHash(long)],
    });
    await agent.forget({ ids: [long.id] });
    expect(await recallPlan(agent, { query: PASSWORD_PLAN.query })).toMatchObject({
      plan: null,
      stale: 1,
    });
  });

  it('rejects thresholds outside (0, 1] with INVALID_INPUT', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    for (const similarityThreshold of [
      0,
      -0.1,
      1.01,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      '0.7',
      null,
    ]) {
      await expect(
        recallPlan(agent, { query: 'q', similarityThreshold: similarityThreshold as number }),
      ).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    }
    expect(await recallPlan(agent, { query: 'q', similarityThreshold: 1 })).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
  });

  it('rejects a query that could not be a plan query with INVALID_INPUT, auditing nothing', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    for (const query of [
      '  ',
      '\u0085',
      'reset\u0000password',
      'lone \ud800',
      'x'.repeat(2 ** 20 + 1),
    ]) {
      await expect(recallPlan(agent, { query })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'query' },
      });
    }
    expect(await store.readAudit({ limit: 10 })).toEqual([]);
  });

  it('rejects malformed plan input with INVALID_INPUT and writes nothing', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const holey = new Array<string>(3);
    holey[0] = 'open the settings';
    holey[2] = 'reset the password';
    const bad = [
      { ...PASSWORD_PLAN, query: '  ' },
      { ...PASSWORD_PLAN, query: '\u0085' },
      { ...PASSWORD_PLAN, steps: holey },
      { ...PASSWORD_PLAN, chunkIds: holey },
      { ...PASSWORD_PLAN, query: 42 },
      { ...PASSWORD_PLAN, steps: 'step' },
      { ...PASSWORD_PLAN, steps: [1] },
      { ...PASSWORD_PLAN, chunkIds: [null] },
      { ...PASSWORD_PLAN, outcomeScore: 1.5 },
      { ...PASSWORD_PLAN, outcomeScore: Number.POSITIVE_INFINITY },
      { ...PASSWORD_PLAN, outcomeScore: '0.9' },
      { ...PASSWORD_PLAN, scope: 'team' },
      { ...PASSWORD_PLAN, agentId: 'someone-else' },
      { ...PASSWORD_PLAN, steps: ['a\u0000b'] },
      { ...PASSWORD_PLAN, chunkIds: ['\uD800'] },
      { ...PASSWORD_PLAN, scope: 'team', outcomeScore: 0.1 },
      { ...PASSWORD_PLAN, query: '', outcomeScore: Number.NaN },
      // Too large once every chunk's hash is added, whether or not the ids name records, and
      // whatever the score.
      { ...PASSWORD_PLAN, chunkIds: LONG_CHUNK_IDS },
      { ...PASSWORD_PLAN, chunkIds: LONG_CHUNK_IDS, outcomeScore: 0.2 },
    ];
    for (const input of bad) {
      await expect(rememberPlan(agent, input as never)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    }
    expect(await store.readAudit({ limit: 10 })).toEqual([]);
    // Half as many fit, hashes included.
    const fits = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      chunkIds: LONG_CHUNK_IDS.slice(0, 500),
    });
    expect(fits.stored).toBe(true);
  });

  it('says how large a plan too large for the metadata limit is, measured as stored', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    // 36-character ids, as UUIDs are: 600 fit in 64 KiB with their hashes, 700 do not.
    const ids = Array.from({ length: 700 }, (_, i) => `chunk-${String(i).padStart(30, '0')}`);
    const error = await rememberPlan(agent, { ...PASSWORD_PLAN, chunkIds: ids }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: 'INVALID_INPUT',
      message:
        'plan: takes 74400 bytes as metadata (query, steps, chunk ids and their hashes), over limits.maxMetadataBytes (65536)',
      details: { field: 'plan' },
    });
    expect(await store.readAudit({ limit: 10 })).toEqual([]);
    expect(
      (await rememberPlan(agent, { ...PASSWORD_PLAN, chunkIds: ids.slice(0, 600) })).stored,
    ).toBe(true);
  });

  it('checks the plan against the metadata depth limit as stored, whatever the score', async () => {
    const { store } = await openEngine();
    // The payload's arrays are two levels below the metadata's top, under PLAN_METADATA_KEY.
    const engine = createEngine({ store, experienceMemory: true, limits: { maxMetadataDepth: 2 } });
    const agent = engine.as('agent-a');
    for (const outcomeScore of [0.9, 0.2]) {
      await expect(rememberPlan(agent, { ...PASSWORD_PLAN, outcomeScore })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: 'metadata.experience_plan.signature_tokens: nests deeper than 2 levels',
      });
    }
    expect(await store.readAudit({ limit: 10 })).toEqual([]);
    const deep = createEngine({ store, experienceMemory: true, limits: { maxMetadataDepth: 3 } });
    expect((await rememberPlan(deep.as('agent-a'), PASSWORD_PLAN)).stored).toBe(true);
  });

  it('names the offending field: a hole, or more than 256 steps or 1,000 chunk ids', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const holey = new Array<string>(2);
    holey[0] = 'open the settings';
    const many = (count: number) => Array.from({ length: count }, (_, i) => `c${i}`);
    for (const [input, field] of [
      [{ ...PASSWORD_PLAN, steps: holey }, 'steps[1]'],
      [{ ...PASSWORD_PLAN, chunkIds: holey }, 'chunkIds[1]'],
      [{ ...PASSWORD_PLAN, steps: many(257) }, 'steps'],
      [{ ...PASSWORD_PLAN, chunkIds: many(1001) }, 'chunkIds'],
      [{ ...PASSWORD_PLAN, steps: ['open', 'a\u0000b'] }, 'steps[1]'],
      [{ ...PASSWORD_PLAN, chunkIds: ['\uD800'] }, 'chunkIds[0]'],
    ] as const) {
      await expect(rememberPlan(agent, input)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field },
      });
    }
    const most = await rememberPlan(agent, { ...PASSWORD_PLAN, steps: many(256) });
    expect(most.stored).toBe(true);
  });

  it('picks the highest similarity, then the higher outcome, then the newer plan', async () => {
    const { engine, clock } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const partial = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      query: 'reset password quickly now',
      outcomeScore: 1,
    });
    clock.advance(1000);
    const older = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      query: 'reset password how',
      outcomeScore: 0.8,
    });
    clock.advance(1000);
    const better = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      query: 'how reset password',
      steps: ['b'],
      outcomeScore: 0.9,
    });
    clock.advance(1000);
    const newer = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      query: 'password how reset',
      steps: ['c'],
      outcomeScore: 0.9,
    });
    const result = await recallPlan(agent, {
      query: 'how to reset password',
      similarityThreshold: 0.5,
    });
    expect([result.plan?.id, result.plan?.similarity, result.candidatesConsidered]).toEqual([
      newer.id,
      1,
      4,
    ]);
    expect([partial.stored, older.stored, better.stored]).toEqual([true, true, true]);
    const loose = await recallPlan(agent, {
      query: 'reset password quickly',
      similarityThreshold: 0.5,
    });
    expect([loose.plan?.id, loose.plan?.similarity]).toEqual([partial.id, 0.75]);
  });

  it('finds a plan exactly at the largest size the threshold allows, where 7 / 0.28 rounds below 25', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const query = 'alpha bravo charlie delta echo foxtrot golf';
    const extra = Array.from({ length: 18 }, (_, i) => `extra${i}`);
    const stored = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      query: `${query} ${extra.join(' ')}`,
    });
    expect([stored.signature.length, 7 / 0.28 < 25]).toEqual([25, true]);
    const result = await recallPlan(agent, { query, similarityThreshold: 0.28 });
    expect([result.plan?.id, result.plan?.similarity, result.candidatesConsidered]).toEqual([
      stored.id,
      0.28,
      1,
    ]);
  });

  it('of two plans cached at the same instant, replays the later one', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const first = await rememberPlan(agent, { ...PASSWORD_PLAN, steps: ['first'] });
    const second = await rememberPlan(agent, { ...PASSWORD_PLAN, steps: ['second'] });
    const result = await recallPlan(agent, { query: PASSWORD_PLAN.query });
    expect([first.id, second.id, result.plan?.id, result.plan?.steps]).toEqual([
      'id-000001',
      'id-000003',
      'id-000003',
      ['second'],
    ]);
  });

  it('of two plans cached at the same instant, takes the greater id in byte order, as the stores sort ids', async () => {
    // U+10000 sorts after U+FFFD in byte (code point) order, before it in UTF-16 code units.
    const ids = ['plan-\uFFFD', 'event-1', 'plan-\u{10000}', 'event-2', 'event-3'];
    const { engine } = await openEngine({
      experienceMemory: true,
      ids: () => ids.shift() as string,
    });
    const agent = engine.as('agent-a');
    const first = await rememberPlan(agent, { ...PASSWORD_PLAN, steps: ['first'] });
    const second = await rememberPlan(agent, { ...PASSWORD_PLAN, steps: ['second'] });
    const result = await recallPlan(agent, { query: PASSWORD_PLAN.query });
    expect([first.id, second.id, result.plan?.id, result.plan?.steps]).toEqual([
      'plan-\uFFFD',
      'plan-\u{10000}',
      'plan-\u{10000}',
      ['second'],
    ]);
  });

  it('audits every replay, hit or miss (unless read auditing is off)', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const { id } = await rememberPlan(agent, PASSWORD_PLAN);
    await recallPlan(agent, { query: PASSWORD_PLAN.query });
    await recallPlan(agent, { query: 'capital of france', similarityThreshold: 0.5 });
    await recallPlan(engine.with({ readAuditing: false }).as('agent-a'), {
      query: PASSWORD_PLAN.query,
    });
    const events = await store.readAudit({ limit: 10 });
    expect(events.map((e) => [e.op, e.recordIds, e.details])).toEqual([
      [
        'remember',
        [id],
        { contentHash: expect.any(String), scope: 'private', memoryType: 'procedural', plan: true },
      ],
      [
        'recall_plan',
        [id],
        { hit: true, similarity: 1, candidatesConsidered: 1, stale: 0, retired: 0, threshold: 0.7 },
      ],
      [
        'recall_plan',
        [],
        {
          hit: false,
          similarity: null,
          candidatesConsidered: 0,
          stale: 0,
          retired: 0,
          threshold: 0.5,
        },
      ],
    ]);
    expect((await engine.verifyAudit()).ok).toBe(true);
  });

  it('finds a plan exactly after 5,000 newer ordinary records and 2,000 other plans', async () => {
    const { engine, clock } = await openEngine({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const target = await rememberPlan(agent, PASSWORD_PLAN);
    clock.advance(1000);
    await agent.rememberMany(
      Array.from({ length: 5000 }, (_, i) => ({
        content: `how to reset password number ${i} for user ${i * 7}`,
      })),
    );
    for (let i = 0; i < 2000; i += 1) {
      await rememberPlan(agent, {
        query: `how password reset variant${i}`,
        steps: [`s${i}`],
        chunkIds: [`c${i}`],
        outcomeScore: 0.99,
      });
    }
    // Every other plan is a candidate (similarity 3/4 = 0.75 ≥ 0.7), none is as similar as the target.
    const result = await recallPlan(agent, { query: 'Password reset — how to?' });
    expect(result.plan).toEqual({
      ...PASSWORD_PLAN,
      id: target.id,
      similarity: 1,
      runningOutcome: 0.92,
      replays: 0,
      failures: 0,
    });
    expect(result.candidatesConsidered).toBe(2001);
    const variant = await recallPlan(agent, { query: 'variant1999 reset password how' });
    expect([variant.plan?.steps, variant.plan?.similarity]).toEqual([['s1999'], 1]);
    // The best plan, cached last, is found behind the 2,001 others sharing the probed token.
    const last = await rememberPlan(agent, {
      ...PASSWORD_PLAN,
      query: 'reset password: how?',
      outcomeScore: 0.95,
    });
    const best = await recallPlan(agent, { query: 'Password reset — how to?' });
    expect([best.plan?.id, best.plan?.runningOutcome, best.candidatesConsidered]).toEqual([
      last.id,
      0.95,
      2002,
    ]);
  }, 240_000);
});
