import { planAccess } from '../../engine/plan-access.js';
import { createHashEmbedder } from '../hash-embedder.js';
import type { Harness, TestApi } from './harness.js';

const ids = (hits: { record: { id: string } }[]) => hits.map((hit) => hit.record.id).sort();

/** Who a grant names (agent and org), how re-granting replaces it, and what outlives a record. */
export function grantsSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  const open = () =>
    h.open({ experienceMemory: true, embedder: createHashEmbedder({ dimensions: 16 }) });
  describe('grants', () => {
    it('name an agent of an org: the same agent id in another org, or in none, sees nothing shared', async () => {
      const { engine } = await open();
      const owner = engine.as('owner', { orgId: 'acme' });
      const { id } = await owner.remember({
        content: 'zebra shared note',
        scope: 'shared',
        tags: ['t'],
      });
      const plan = await planAccess(owner).writePlan({
        query: 'zebra plan',
        scope: 'shared',
        payload: {},
        tokens: ['plan', 'zebra'],
      });
      await owner.share({ recordId: id, with: ['grantee'] });
      await owner.share({ recordId: plan.id, with: ['grantee'] });
      const granted = engine.as('grantee', { orgId: 'acme' });
      expect(
        ids((await granted.recall({ query: 'zebra note', strategy: 'lexical' })).hits),
      ).toEqual([id]);
      const seen: Record<string, unknown> = {};
      const others = [
        ['other org', engine.as('grantee', { orgId: 'other' })],
        ['no org', engine.as('grantee')],
      ] as const;
      for (const [name, handle] of others) {
        for (const strategy of ['lexical', 'semantic', 'hybrid'] as const) {
          seen[`${name} ${strategy}`] = ids(
            (await handle.recall({ query: 'zebra note', strategy })).hits,
          );
          seen[`${name} ${strategy} filtered`] = ids(
            (await handle.recall({ query: 'zebra note', strategy, filters: { tagsAny: ['t'] } }))
              .hits,
          );
        }
        seen[`${name} get`] = await handle.get(id).then(
          () => 'found',
          (error: { code: string }) => error.code,
        );
        seen[`${name} plans`] = (
          await planAccess(handle).findCandidates({ tokens: ['zebra'], minTokens: 1, maxTokens: 5 })
        ).length;
      }
      expect(seen).toEqual(
        Object.fromEntries(
          Object.keys(seen).map((key) => [
            key,
            key.endsWith('get') ? 'NOT_FOUND' : key.endsWith('plans') ? 0 : [],
          ]),
        ),
      );
    });

    it('a re-grant that shortens access applies to recall and plan lookup once it lapses', async () => {
      const { engine, clock } = await open();
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const { id } = await owner.remember({ content: 'zebra shared note', scope: 'shared' });
      const plan = await planAccess(owner).writePlan({
        query: 'zebra plan',
        scope: 'shared',
        payload: {},
        tokens: ['zebra'],
      });
      await owner.share({ recordId: id, with: ['agent-b'] });
      await owner.share({ recordId: plan.id, with: ['agent-b'] });
      // Recalled once, so that a store's in-memory indexes hold the first grant.
      expect(ids((await b.recall({ query: 'zebra', strategy: 'semantic' })).hits)).toEqual([id]);
      expect(ids((await b.recall({ query: 'zebra', strategy: 'lexical' })).hits)).toEqual([id]);
      const until = new Date(clock.now().getTime() + 10_000);
      await owner.share({ recordId: id, with: ['agent-b'], expiresAt: until });
      await owner.share({ recordId: plan.id, with: ['agent-b'], expiresAt: until });
      clock.advance(10_000);
      expect({
        lexical: ids((await b.recall({ query: 'zebra', strategy: 'lexical' })).hits),
        semantic: ids((await b.recall({ query: 'zebra', strategy: 'semantic' })).hits),
        plans: (
          await planAccess(b).findCandidates({ tokens: ['zebra'], minTokens: 1, maxTokens: 5 })
        ).length,
      }).toEqual({ lexical: [], semantic: [], plans: 0 });
    });

    it('go with a hard-forgotten record: restoring it from a backup brings back no old grantee', async () => {
      const { engine, store } = await open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const { id } = await a.remember({ content: 'zebra shared thing', scope: 'shared' });
      const backup = [];
      for await (const item of engine.exportRecords()) backup.push(item);
      await a.share({ recordId: id, with: ['agent-b'] });
      expect(ids((await b.recall({ query: 'zebra', strategy: 'lexical' })).hits)).toEqual([id]);
      await a.forget({ ids: [id], mode: 'hard' });
      expect(await store.listGrants([id])).toEqual([]);
      await engine.importRecords(backup);
      expect(ids((await a.recall({ query: 'zebra', strategy: 'lexical' })).hits)).toEqual([id]);
      expect({
        lexical: ids((await b.recall({ query: 'zebra', strategy: 'lexical' })).hits),
        semantic: ids((await b.recall({ query: 'zebra', strategy: 'semantic' })).hits),
        get: await b.get(id).then(
          () => 'found',
          (error: { code: string }) => error.code,
        ),
      }).toEqual({ lexical: [], semantic: [], get: 'NOT_FOUND' });
    });
  });
}
