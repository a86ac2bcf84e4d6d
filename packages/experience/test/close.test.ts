import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type MemoryStore, planAccess } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { afterEach, describe, expect, it } from 'vitest';
import { recallPlan, rememberPlan, withExperienceMemory } from '../src/index.js';

let root: string | null = null;
afterEach(() => {
  if (root !== null) rmSync(root, { recursive: true, force: true });
  root = null;
});

/** A store whose record reads and plan lookups wait, while `hold` is set, until it settles. */
function holding(store: MemoryStore): { store: MemoryStore; hold(until: Promise<void>): void } {
  let held: Promise<void> | null = null;
  const waiting = new Set<PropertyKey>(['get', 'findPlanCandidates']);
  return {
    store: new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        if (!waiting.has(key)) return value.bind(target);
        return async (...args: unknown[]) => {
          await held;
          return value.apply(target, args);
        };
      },
    }),
    hold(until) {
      held = until;
    },
  };
}

describe('engine.close during experience calls', () => {
  it('lets a rememberPlan and a recallPlan made before it finish every step, and keeps what they wrote', async () => {
    root = mkdtempSync(join(tmpdir(), 'mnemo-experience-close-'));
    const path = join(root, 'memory.duckdb');
    const ids = createSequentialIds();
    const clock = createManualClock('2026-01-01T00:00:00.000Z');
    const held = holding(createDuckDBStore({ path }));
    const engine = withExperienceMemory(createEngine({ store: held.store, clock, ids }));
    await engine.init();
    const agent = engine.as('agent-a');
    const chunk = await agent.remember({ content: 'Rotate the keys under Settings, then API.' });
    const cached = await rememberPlan(agent, {
      query: 'how do I rotate my api keys',
      steps: ['recall:lexical'],
      chunkIds: [chunk.id],
      outcomeScore: 0.9,
    });

    let release = () => {};
    held.hold(
      new Promise((resolve) => {
        release = resolve;
      }),
    );
    // Each waits at its first store read: the chunk lookup, the plan lookup.
    const remembered = rememberPlan(agent, {
      query: 'where are the billing invoices',
      steps: ['recall:hybrid'],
      chunkIds: [chunk.id],
      outcomeScore: 0.7,
    });
    const recalled = recallPlan(agent, { query: 'How do I rotate my API keys?' });
    const closed = engine.close();
    for (let turn = 0; turn < 20; turn += 1) await new Promise((done) => setImmediate(done));
    release();

    // Ids go to records and audit events alike, and the two calls ran at once.
    const stored = await remembered;
    expect(stored).toEqual({
      id: expect.stringMatching(/^id-00000[56]$/),
      signature: ['are', 'billing', 'invoices', 'the', 'where'],
      stored: true,
    });
    expect(await recalled).toEqual({
      plan: {
        id: cached.id,
        query: 'how do I rotate my api keys',
        steps: ['recall:lexical'],
        chunkIds: [chunk.id],
        outcomeScore: 0.9,
        similarity: 1,
        runningOutcome: 0.9,
        replays: 0,
        failures: 0,
      },
      candidatesConsidered: 1,
      stale: 0,
      retired: 0,
    });
    await closed;
    const refused = expect.objectContaining({
      code: 'STORE_UNAVAILABLE',
      message: 'the engine is closed',
    });
    await expect(recallPlan(agent, { query: 'where are the billing invoices' })).rejects.toThrow(
      refused,
    );
    const access = planAccess(agent);
    await expect(access.getMany([chunk.id])).rejects.toThrow(refused);
    await expect(
      access.findCandidates({ tokens: ['keys'], minTokens: 1, maxTokens: 10 }),
    ).rejects.toThrow(refused);

    const reopened = withExperienceMemory(
      createEngine({ store: createDuckDBStore({ path }), clock, ids }),
    );
    await reopened.init();
    try {
      const again = reopened.as('agent-a');
      expect((await recallPlan(again, { query: 'where are the billing invoices' })).plan?.id).toBe(
        stored.id,
      );
      // The two calls under way at close ran at once: their events are 3 and 4, in either order.
      const events = (await reopened.store.readAudit({ limit: 100 })).map((event) =>
        [event.op, ...event.recordIds].join(' '),
      );
      expect([...events.slice(0, 2), ...events.slice(2, 4).sort(), ...events.slice(4)]).toEqual([
        `remember ${chunk.id}`,
        `remember ${cached.id}`,
        `recall_plan ${cached.id}`,
        `remember ${stored.id}`,
        `recall_plan ${stored.id}`,
      ]);
      expect((await reopened.verifyAudit()).ok).toBe(true);
    } finally {
      await reopened.close();
    }
  });
});
