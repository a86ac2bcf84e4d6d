import { type Engine, type MemoryStore, MnemoError } from '@mnemo/core';
import { tally } from '@mnemo/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { recallPlan, rememberPlan } from '../src/index.js';
import { openEngine, STORES } from './fixture.js';

// Property-based fuzzing of the experience tier's public inputs, on each store: every call
// succeeds or throws INVALID_INPUT, and a failed call (or a plan not stored) changes nothing.
const SEED = 20_261_130;
const RUNS = 40;

const special = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'nul\u0000inside',
  '\ud800',
  'lone \udfff surrogate',
  '\u202eright to left\u202c',
  "'; DROP TABLE mnemo_records; --",
  '/* comment */ OR 1=1',
  '$1 $$ :: %s %',
  '__proto__',
  'constructor',
  'how do I reset my password',
  'word '.repeat(5_000),
  'x'.repeat(300),
);
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 3, arbitrary: special },
  { weight: 2, arbitrary: fc.constantFrom('reset', 'password', 'invoice', 'refund', 'again') },
);
const junk = fc.oneof(
  fc.constantFrom(null, undefined, Number.NaN, Number.POSITIVE_INFINITY, -0, 0, 1, true, [], {}),
  fc.object({ maxDepth: 2 }),
  fc.double(),
);
const query = fc.oneof(
  { weight: 5, arbitrary: fc.array(text, { minLength: 1, maxLength: 6 }).map((w) => w.join(' ')) },
  { weight: 1, arbitrary: junk },
);
const list = fc.oneof(
  { weight: 5, arbitrary: fc.array(text, { maxLength: 4 }) },
  { weight: 1, arbitrary: junk },
);
const score = fc.oneof(
  fc.double({ min: -1, max: 1.5 }),
  fc.constantFrom(0.5, 0.49, 1, Number.NaN, Number.NEGATIVE_INFINITY, -0),
  junk,
);
const scope = fc.oneof(fc.constantFrom('private', 'shared', 'public', 'global', 'PUBLIC'), junk);
/** Keys no option has, and keys that would pollute a prototype if copied carelessly. */
const strayKey = fc.constantFrom('__proto__', 'constructor', 'agentId', 'prototype', 'extra');

function withStray<T extends object>(arb: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: arb },
    {
      weight: 1,
      // JSON.parse makes `__proto__` an own key, as a parsed request body would.
      arbitrary: fc.tuple(arb, strayKey, junk).map(([value, key, extra]) => ({
        ...value,
        ...JSON.parse(`{"${key}": ${JSON.stringify(extra ?? null) ?? 'null'}}`),
      })),
    },
    { weight: 1, arbitrary: junk },
  );
}

const rememberInput = withStray(
  fc.record(
    { query, steps: list, chunkIds: list, outcomeScore: score, scope },
    { requiredKeys: ['query', 'steps', 'chunkIds', 'outcomeScore'] },
  ),
);
const recallInput = withStray(
  fc.record(
    { query, similarityThreshold: fc.oneof(fc.double({ min: -0.5, max: 1.5 }), junk) },
    { requiredKeys: ['query'] },
  ),
);

async function snapshot(store: MemoryStore) {
  return {
    records: await store.scanRecords({ limit: 10_000 }),
    audit: await store.readAudit({ limit: 10_000 }),
    heads: await store.auditHeads(),
  };
}

/** Runs `call`; a failure must be INVALID_INPUT and leave the store exactly as it was. */
async function probe<T>(store: MemoryStore, input: unknown, call: () => Promise<T>) {
  const before = await snapshot(store);
  try {
    return { ok: true as const, value: await call() };
  } catch (error) {
    expect(
      MnemoError.isInstance(error) ? error.code : error,
      `input ${fc.stringify(input)} threw`,
    ).toBe('INVALID_INPUT');
    expect(await snapshot(store)).toEqual(before);
    return { ok: false as const };
  } finally {
    expect(({} as Record<string, unknown>).polluted).toBe(undefined);
  }
}

async function verified(engine: Engine) {
  const audit = await engine.verifyAudit();
  const records = await engine.verifyRecords();
  return [audit.problems, records.problems];
}

describe.each(STORES)('experience fuzzing on %s', (kind) => {
  it('takes the smallest positive threshold (found by fuzzing: the size bound overflowed)', async () => {
    const { engine } = await openEngine({ experienceMemory: true }, kind);
    const handle = engine.as('agent-a');
    await rememberPlan(handle, {
      query: 'reset password now',
      steps: [],
      chunkIds: [],
      outcomeScore: 1,
    });
    const { plan, candidatesConsidered } = await recallPlan(handle, {
      query: 'reset',
      similarityThreshold: Number.MIN_VALUE,
    });
    expect([plan?.query, plan?.similarity, candidatesConsidered]).toEqual([
      'reset password now',
      1 / 3,
      1,
    ]);
  });

  it('rememberPlan: stores the query byte-for-byte, declines, or fails with INVALID_INPUT', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true }, kind);
    const handle = engine.as('agent-a');
    tally({ fuzzRuns: RUNS });
    await fc.assert(
      fc.asyncProperty(rememberInput, async (input) => {
        const before = await snapshot(store);
        const result = await probe(store, input, () => rememberPlan(handle, input as never));
        if (!result.ok) return;
        if (result.value.stored) {
          const { query: stored } = input as { query: string };
          expect((await handle.get(result.value.id as string)).content).toBe(stored);
        } else {
          expect(await snapshot(store)).toEqual(before);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
    expect(await verified(engine)).toEqual([[], []]);
  });

  it('recallPlan: a miss, a plan at or above the threshold, or INVALID_INPUT', async () => {
    const { engine, store } = await openEngine({ experienceMemory: true }, kind);
    const handle = engine.as('agent-a');
    for (const words of ['reset password', 'invoice refund again', 'password again reset']) {
      await rememberPlan(handle, { query: words, steps: ['s'], chunkIds: [], outcomeScore: 0.9 });
    }
    tally({ fuzzRuns: RUNS });
    await fc.assert(
      fc.asyncProperty(recallInput, async (input) => {
        const result = await probe(store, input, () => recallPlan(handle, input as never));
        if (!result.ok || result.value.plan === null) return;
        const given = (input as { similarityThreshold?: number }).similarityThreshold;
        const threshold = given === undefined ? 0.7 : given;
        expect(result.value.plan.similarity).toBeGreaterThanOrEqual(threshold);
      }),
      { numRuns: RUNS, seed: SEED },
    );
    expect(await verified(engine)).toEqual([[], []]);
  });
});
