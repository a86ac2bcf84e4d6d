import { createEngine, type MemoryStore } from '@mnemo/core';
import { createHashEmbedder, createManualClock } from '@mnemo/core/testing';
import { recallPlan, rememberPlan } from '@mnemo/experience';
import { START } from './fixture.js';

const HOUR = 3_600_000;

/**
 * Fills `store` with records that exercise every exported field: several owners and orgs,
 * every scope, embeddings, nested metadata, grants (one expiring), access counts, an
 * expired record, soft-deleted, redacted and hard-deleted records, and plans with a
 * replay. Closes the store. Returns the plans' ids.
 */
export async function fillRichStore(store: MemoryStore): Promise<{ plans: string[] }> {
  const clock = createManualClock(START);
  const engine = createEngine({
    store,
    clock,
    embedder: createHashEmbedder({ dimensions: 16 }),
    experienceMemory: true,
  });
  await engine.init();
  try {
    const a = engine.as('agent-a', { orgId: 'acme' });
    const b = engine.as('agent-b', { orgId: 'acme' });
    const c = engine.as('agent-c');
    const shared = await a.remember({
      content: 'The shared field guide: herons hunt at dawn',
      memoryType: 'semantic',
      scope: 'shared',
      importance: 0.9,
      tags: ['birds', 'guide'],
      metadata: { nested: { deep: [1, 2.5, { k: 'v' }], flag: true }, 'unicode ✓': 'ünïcödé' },
      threadId: 'thread-1',
      sourceType: 'chat',
    });
    await a.share({ recordId: shared.id, with: ['agent-b'], permission: 'write' });
    await a.share({
      recordId: shared.id,
      with: ['agent-d'],
      expiresAt: new Date(Date.parse(START) + HOUR),
    });
    await a.remember({
      content: 'A reminder that expires within the hour',
      expiresAt: new Date(Date.parse(START) + HOUR / 2),
    });
    await b.remember({ content: 'Public to acme: the kestrel hovers', scope: 'public' });
    clock.advance(1000);
    await c.remember({
      content: 'Global: owls hunt at night',
      scope: 'global',
      memoryType: 'working',
    });
    const soft = await c.remember({ content: 'c forgets this softly' });
    const redacted = await c.remember({ content: 'c redacts this secret', tags: ['secret'] });
    const hard = await c.remember({ content: 'c removes this for good' });
    await b.recall({ query: 'herons kestrel hunt' });
    await c.forget({ ids: [soft.id] });
    await c.forget({ ids: [redacted.id], mode: 'redact' });
    await c.forget({ ids: [hard.id], mode: 'hard' });
    const plan = await rememberPlan(a, {
      query: 'when do herons hunt',
      steps: ['recall herons', 'answer'],
      chunkIds: [shared.id],
      outcomeScore: 0.8,
      scope: 'public',
    });
    const other = await rememberPlan(b, {
      query: 'where does the kestrel hover',
      steps: ['recall kestrel'],
      chunkIds: [],
      outcomeScore: 1,
    });
    clock.advance(HOUR);
    await recallPlan(a, { query: 'When do herons hunt?' });
    await recallPlan(b, { query: 'when do the herons hunt' });
    await recallPlan(b, { query: 'nothing like it' });
    return { plans: [plan.id as string, other.id as string] };
  } finally {
    await engine.close();
  }
}
