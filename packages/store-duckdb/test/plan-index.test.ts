import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, planAccess } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

// The DuckDB store answers plan lookup from an in-memory index of the plans, their grants and
// stats: init() must rebuild it from the file exactly.
describe('the DuckDB plan index', () => {
  it('is rebuilt by init() from the file: plans, grants, stats, deletions', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mnemo-plan-index-'));
    folders.push(folder);
    const path = join(folder, 'plans.duckdb');
    const ids = createSequentialIds();
    const clock = createManualClock('2026-01-01T00:00:00.000Z');
    const open = async () => {
      const store = createDuckDBStore({ path });
      const engine = createEngine({ store, clock, ids, experienceMemory: true });
      await engine.init();
      return engine;
    };
    const find = async (engine: Awaited<ReturnType<typeof open>>, agent: string) =>
      (
        await planAccess(engine.as(agent)).findCandidates({
          tokens: ['alpha', 'beta'],
          minTokens: 1,
          maxTokens: 5,
        })
      )
        .map((c) => [c.record.id, c.stats?.replays ?? 0])
        .sort();

    const first = await open();
    const owner = first.as('owner');
    const write = (query: string, scope: 'private' | 'shared' | 'global') =>
      planAccess(owner).writePlan({ query, payload: {}, tokens: query.split(' '), scope });
    const kept = await write('alpha beta', 'global');
    const shared = await write('alpha gamma', 'shared');
    const forgotten = await write('beta delta', 'global');
    await owner.share({ recordId: shared.id, with: ['reader'] });
    await owner.forget({ ids: [forgotten.id] });
    await planAccess(owner).updatePlanStats(kept.id, (_, current) => ({
      runningOutcome: 0.7,
      replays: (current?.replays ?? 0) + 1,
      failures: 0,
      details: {},
    }));
    const before = [await find(first, 'reader'), await find(first, 'stranger')];
    expect(before).toEqual([
      [
        [kept.id, 1],
        [shared.id, 0],
      ],
      [[kept.id, 1]],
    ]);
    await first.close();

    const second = await open();
    expect([await find(second, 'reader'), await find(second, 'stranger')]).toEqual(before);
    await second.close();
  });
  it('returns plans with the accesses touched on them, through the journal or on the file, as get does', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mnemo-plan-index-'));
    folders.push(folder);
    const store = createDuckDBStore({ path: join(folder, 'touched.duckdb') });
    const clock = createManualClock('2026-01-01T00:00:00.000Z');
    const engine = createEngine({ store, clock, experienceMemory: true });
    await engine.init();
    try {
      // The first write of a file runs on it; a lone touch then is journaled.
      const plan = await planAccess(engine.as('owner')).writePlan({
        query: 'alpha beta',
        payload: {},
        tokens: ['alpha', 'beta'],
      });
      const visibility = { agentId: 'owner', orgId: null, now: clock.now() };
      const first = new Date('2026-01-02T00:00:00.000Z');
      const second = new Date('2026-01-03T00:00:00.000Z');
      await store.transaction((tx) => tx.touch([plan.id], first));
      // A read after the touch moves the transaction onto the file.
      await store.transaction(async (tx) => {
        await tx.touch([plan.id], second);
        await tx.get(visibility, [plan.id]);
      });
      const [candidate] = await store.findPlanCandidates({
        visibility,
        tokens: ['alpha'],
        minTokens: 1,
        maxTokens: 5,
      });
      const [read] = await store.get(visibility, [plan.id]);
      expect([candidate?.record.accessCount, candidate?.record.lastAccessedAt]).toEqual([
        2,
        second,
      ]);
      expect(candidate?.record).toEqual(read?.record);
    } finally {
      await engine.close();
    }
  });
  it('drops the grants of a plan deleted for good: restored from a backup, it has none', async () => {
    const store = createDuckDBStore({ path: ':memory:' });
    const engine = createEngine({ store, experienceMemory: true });
    await engine.init();
    try {
      const owner = engine.as('owner');
      const find = async () =>
        (
          await planAccess(engine.as('reader')).findCandidates({
            tokens: ['alpha'],
            minTokens: 1,
            maxTokens: 5,
          })
        ).map((candidate) => candidate.record.id);
      const plan = await planAccess(owner).writePlan({
        query: 'alpha beta',
        payload: { signature_tokens: ['alpha', 'beta'] },
        tokens: ['alpha', 'beta'],
        scope: 'shared',
      });
      const backup = [];
      for await (const item of engine.exportRecords()) backup.push(item);
      await owner.share({ recordId: plan.id, with: ['reader'] });
      const shared = await find();
      await owner.forget({ ids: [plan.id], mode: 'hard' });
      expect(await engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      expect([shared, await find()]).toEqual([[plan.id], []]);
    } finally {
      await engine.close();
    }
  });
});
