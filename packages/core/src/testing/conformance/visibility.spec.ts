import { planAccess } from '../../engine/plan-access.js';
import type { ListQuery } from '../../ports/memory-store.js';
import type { Harness, TestApi } from './harness.js';

export function visibilitySpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('visibility', () => {
    it('applies scope, grants and tenant to get, recall and list', async () => {
      const { engine, clock } = await h.open();
      const owner = engine.as('owner', { orgId: 'acme' });
      const ids: Record<string, string> = {};
      for (const scope of ['private', 'shared', 'public', 'global'] as const) {
        ids[scope] = (await owner.remember({ content: `${scope} visibility note`, scope })).id;
      }
      await owner.share({ recordId: ids.shared as string, with: ['grantee'] });
      await owner.share({
        recordId: ids.shared as string,
        with: ['lapsed'],
        expiresAt: new Date(clock.now().getTime() + 1000),
      });
      clock.advance(1000);

      const callers = {
        owner,
        grantee: engine.as('grantee', { orgId: 'acme' }),
        lapsed: engine.as('lapsed', { orgId: 'acme' }),
        colleague: engine.as('colleague', { orgId: 'acme' }),
        outsider: engine.as('outsider', { orgId: 'other' }),
        // Same agent id, no org: a different principal.
        sameIdNoOrg: engine.as('owner'),
      };
      const expected: Record<keyof typeof callers, string[]> = {
        owner: ['private', 'shared', 'public', 'global'],
        grantee: ['shared', 'public', 'global'],
        lapsed: ['public', 'global'],
        colleague: ['public', 'global'],
        outsider: ['global'],
        sameIdNoOrg: ['global'],
      };
      for (const [name, handle] of Object.entries(callers)) {
        const want = (expected[name as keyof typeof callers] ?? [])
          .map((scope) => ids[scope])
          .sort();
        const recalled = (await handle.recall({ query: 'visibility note', limit: 100 })).hits
          .map((hit) => hit.record.id)
          .sort();
        expect({ name, recalled }).toEqual({ name, recalled: want });
        const gettable: string[] = [];
        for (const id of Object.values(ids)) {
          const found = await handle.get(id).then(
            () => true,
            (error: { code?: string }) => {
              expect(error.code).toBe('NOT_FOUND');
              return false;
            },
          );
          if (found) gettable.push(id);
        }
        expect({ name, gettable: gettable.sort() }).toEqual({ name, gettable: want });
      }
    });

    it('lists the visible records in id order, after afterId and at most limit, plans only when asked', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const ids: string[] = [];
      for (const content of ['one', 'two', 'three', 'four']) {
        ids.push((await a.remember({ content })).id);
      }
      const plan = await planAccess(a).writePlan({
        query: 'five',
        payload: { steps: [] },
        tokens: ['five'],
      });
      await engine.as('agent-b').remember({ content: 'not visible to agent-a' });
      const visibility = { agentId: 'agent-a', orgId: null, now: clock.now() };
      const list = async (query: Partial<ListQuery>) =>
        (await store.list({ visibility, filters: {}, ...query })).map((v) => v.record.id);
      expect(await list({})).toEqual(ids);
      expect(await list({ includePlans: true })).toEqual([...ids, plan.id]);
      expect(await list({ afterId: ids[1] })).toEqual(ids.slice(2));
      expect(await list({ afterId: ids[1], limit: 1 })).toEqual([ids[2]]);
      expect(await list({ limit: 2 })).toEqual(ids.slice(0, 2));
      expect(await list({ afterId: ids[3], includePlans: true })).toEqual([plan.id]);
      expect(await list({ afterId: plan.id as string, includePlans: true })).toEqual([]);
    });

    it('answers an invisible record exactly like a missing one', async () => {
      const { engine } = await h.open();
      const { id } = await engine.as('agent-a').remember({ content: 'private thing' });
      const b = engine.as('agent-b');
      const invisible = await b
        .get(id)
        .catch((e: Error & { code: string }) => [e.code, e.message.replace(id, 'ID')]);
      const missing = await b
        .get('no-such-id')
        .catch((e: Error & { code: string }) => [e.code, e.message.replace('no-such-id', 'ID')]);
      expect(invisible).toEqual(missing);
      const forgetInvisible = await b.forget({ ids: [id] }).catch((e: { code: string }) => e.code);
      const shareInvisible = await b
        .share({ recordId: id, with: ['agent-c'] })
        .catch((e: { code: string }) => e.code);
      expect([forgetInvisible, shareInvisible]).toEqual(['NOT_FOUND', 'NOT_FOUND']);
    });
  });
}
