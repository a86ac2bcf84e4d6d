import { createEngine } from '../../engine/create-engine.js';
import type { RecordFilters } from '../../ports/memory-store.js';
import { createHashEmbedder } from '../hash-embedder.js';
import type { Harness, TestApi } from './harness.js';

export function shareSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('share', () => {
    it('grants read: the grantee sees the record but cannot forget or re-share it', async () => {
      const { engine, store } = await h.open();
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const { id } = await owner.remember({ content: 'shared plan for Q3', scope: 'shared' });
      await expect(b.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(await owner.share({ recordId: id, with: ['agent-b', 'agent-b'] })).toEqual({
        recordId: id,
        permission: 'read',
        grantees: ['agent-b'],
        expiresAt: null,
      });
      expect((await b.get(id)).content).toBe('shared plan for Q3');
      await expect(b.forget({ ids: [id] })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
      await expect(b.share({ recordId: id, with: ['agent-c'] })).rejects.toMatchObject({
        code: 'PERMISSION_DENIED',
      });
      const event = (await store.readAudit({ limit: 10 })).find((e) => e.op === 'share');
      expect([event?.chain, event?.recordIds, event?.details]).toEqual([
        'owner',
        [id],
        { grantees: ['agent-b'], permission: 'read', expiresAt: null },
      ]);
    });

    it('shares with up to 256 agents at once, whatever the tag limit, owner or not', async () => {
      const { store, clock } = await h.open();
      const engine = createEngine({ store, clock, limits: { maxTags: 2 } });
      const owner = engine.as('owner');
      const { id } = await owner.remember({
        content: 'a note for the whole team',
        scope: 'shared',
      });
      const agents = (count: number, prefix = 'agent') =>
        Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
      await expect(owner.share({ recordId: id, with: agents(257) })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: 'with: must have at most 256 items',
      });
      expect((await owner.share({ recordId: id, with: agents(256) })).grantees).toHaveLength(256);
      expect((await engine.as('agent-255').get(id)).content).toBe('a note for the whole team');
      // A grantee holding share passes it on: each of the others is checked.
      await owner.share({ recordId: id, with: ['lead'], permission: 'share' });
      const passed = await engine
        .as('lead')
        .share({ recordId: id, with: agents(256, 'member'), permission: 'read' });
      expect(passed.grantees).toHaveLength(256);
      expect((await engine.as('member-0').get(id)).content).toBe('a note for the whole team');
    });

    it('follows the permission hierarchy and lets a re-grant replace the old one', async () => {
      const { engine } = await h.open();
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const c = engine.as('agent-c');
      const { id } = await owner.remember({ content: 'team doc', scope: 'shared' });
      await owner.share({ recordId: id, with: ['agent-b'], permission: 'share' });
      // b may share onward up to its own level, not above.
      await expect(
        b.share({ recordId: id, with: ['agent-c'], permission: 'admin' }),
      ).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
      await b.share({ recordId: id, with: ['agent-c'], permission: 'delete' });
      // Downgrade c to read: c can no longer forget.
      await owner.share({ recordId: id, with: ['agent-c'], permission: 'read' });
      await expect(c.forget({ ids: [id] })).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
      await owner.share({ recordId: id, with: ['agent-c'], permission: 'delete' });
      expect(await c.forget({ ids: [id] })).toEqual({ mode: 'soft', forgotten: [id] });
      await expect(owner.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('lets only the owner or a higher permission change an existing grant', async () => {
      const { engine, store } = await h.open();
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const d = engine.as('agent-d');
      const { id } = await owner.remember({ content: 'team doc', scope: 'shared' });
      await owner.share({ recordId: id, with: ['agent-b'], permission: 'admin' });
      await owner.share({ recordId: id, with: ['agent-d', 'agent-e'], permission: 'share' });
      const events = (await store.readAudit({ limit: 100 })).length;
      // d holds share: it cannot lower, shorten or even repeat the grant of b (admin) or e (share).
      for (const input of [
        { with: ['agent-b'], permission: 'read' as const },
        {
          with: ['agent-b'],
          permission: 'share' as const,
          expiresAt: new Date(Date.now() + 60_000),
        },
        { with: ['agent-c', 'agent-e'], permission: 'read' as const },
      ]) {
        await expect(d.share({ recordId: id, ...input })).rejects.toMatchObject({
          code: 'PERMISSION_DENIED',
          details: { id, grantee: input.with.at(-1) },
        });
      }
      expect((await store.readAudit({ limit: 100 })).length).toBe(events);
      expect((await store.listGrants([id])).map((g) => [g.granteeAgentId, g.permission])).toEqual([
        ['agent-b', 'admin'],
        ['agent-d', 'share'],
        ['agent-e', 'share'],
      ]);
      // d may grant c, then raise c's grant, up to d's own level.
      await d.share({ recordId: id, with: ['agent-c'], permission: 'read' });
      await d.share({ recordId: id, with: ['agent-c'], permission: 'delete' });
      // b (admin) outranks d (share) and may lower it; the owner may change any grant.
      await b.share({ recordId: id, with: ['agent-d'], permission: 'read' });
      await owner.share({ recordId: id, with: ['agent-b'], permission: 'read' });
      expect((await store.listGrants([id])).map((g) => [g.granteeAgentId, g.permission])).toEqual([
        ['agent-b', 'read'],
        ['agent-c', 'delete'],
        ['agent-d', 'read'],
        ['agent-e', 'share'],
      ]);
    });

    it('lets a grant lapse at expiresAt', async () => {
      const { engine, clock } = await h.open();
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const { id } = await owner.remember({ content: 'temporary access', scope: 'shared' });
      const expiresAt = new Date(clock.now().getTime() + 10_000);
      expect((await owner.share({ recordId: id, with: ['agent-b'], expiresAt })).expiresAt).toEqual(
        expiresAt,
      );
      clock.advance(9_999);
      expect((await b.get(id)).id).toBe(id);
      clock.advance(1);
      await expect(b.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('a lapsed grant hides the record from every read path at expiresAt, not a millisecond before', async () => {
      const { engine, store, clock } = await h.open({
        embedder: createHashEmbedder({ dimensions: 16 }),
      });
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const { id } = await owner.remember({
        content: 'temporary access note',
        scope: 'shared',
        tags: ['temp'],
        threadId: 'thread-1',
      });
      const expiresAt = new Date(clock.now().getTime() + 10_000);
      await owner.share({ recordId: id, with: ['agent-b'], expiresAt });
      // Each filter takes another path in some store (postings, tags, records, vectors, thread).
      const lexical: RecordFilters[] = [
        {},
        { memoryTypes: ['episodic'] },
        { tagsAny: ['temp'] },
        { minImportance: 0 },
      ];
      const seen = async () => {
        const found: string[][] = [];
        for (const filters of lexical) {
          const { hits } = await b.recall({
            query: 'temporary note',
            strategy: 'lexical',
            filters,
          });
          found.push(hits.map((hit) => hit.record.id));
        }
        for (const strategy of ['semantic', 'hybrid'] as const) {
          const { hits } = await b.recall({ query: 'temporary access note', strategy });
          found.push(hits.map((hit) => hit.record.id));
        }
        const inThread = await b.recall({
          query: 'temporary access note',
          strategy: 'semantic',
          filters: { threadId: 'thread-1' },
        });
        found.push(inThread.hits.map((hit) => hit.record.id));
        const now = clock.now();
        const listed = await store.list({
          visibility: { agentId: 'agent-b', orgId: null, now },
          filters: {},
        });
        found.push(listed.map((visible) => visible.record.id));
        found.push(
          await b.get(id).then(
            (record) => [record.id],
            () => [],
          ),
        );
        return found;
      };
      clock.advance(9_999);
      expect(await seen()).toEqual(Array(9).fill([id]));
      clock.advance(1);
      expect(await seen()).toEqual(Array(9).fill([]));
    });

    it("reports the caller's permission on each record it sees: its grant's, at least read where it may read", async () => {
      const { engine, store, clock } = await h.open();
      const owner = engine.as('owner', { orgId: 'acme' });
      const notes: Record<string, string> = {};
      for (const scope of ['shared', 'public', 'global'] as const) {
        notes[scope] = (await owner.remember({ content: `${scope} note`, scope })).id;
      }
      await owner.share({
        recordId: notes.shared as string,
        with: ['grantee'],
        permission: 'write',
      });
      await owner.share({
        recordId: notes.public as string,
        with: ['grantee'],
        permission: 'delete',
      });
      const permissions = async (agentId: string, orgId: string | null) => {
        const visibility = { agentId, orgId, now: clock.now() };
        const got = await store.get(visibility, Object.values(notes));
        const listed = await store.list({ visibility, filters: {} });
        expect(listed).toEqual([...got].sort((x, y) => (x.record.id < y.record.id ? -1 : 1)));
        return Object.fromEntries(
          got.map(({ record, permission }) => [record.content.split(' ')[0], permission]),
        );
      };
      expect(await permissions('owner', 'acme')).toEqual({
        shared: 'admin',
        public: 'admin',
        global: 'admin',
      });
      expect(await permissions('grantee', 'acme')).toEqual({
        shared: 'write',
        public: 'delete',
        global: 'read',
      });
      expect(await permissions('colleague', 'acme')).toEqual({ public: 'read', global: 'read' });
      expect(await permissions('outsider', null)).toEqual({ global: 'read' });
    });

    it('refuses to share a private record, and grants on public records add permissions', async () => {
      const { engine } = await h.open();
      const owner = engine.as('owner');
      const b = engine.as('agent-b');
      const secret = await owner.remember({ content: 'private note' });
      await expect(owner.share({ recordId: secret.id, with: ['agent-b'] })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      const open = await owner.remember({ content: 'public note', scope: 'public' });
      await expect(b.forget({ ids: [open.id] })).rejects.toMatchObject({
        code: 'PERMISSION_DENIED',
      });
      await owner.share({ recordId: open.id, with: ['agent-b'], permission: 'delete' });
      expect(await b.forget({ ids: [open.id], mode: 'hard' })).toEqual({
        mode: 'hard',
        forgotten: [open.id],
      });
    });
  });
}
