import { createEngine } from '../../engine/create-engine.js';
import type { MemoryStore } from '../../ports/memory-store.js';
import { codeOf, type Fixture, type Harness, type TestApi } from './harness.js';

/** Everything a store holds that an operation could change. */
async function snapshot(store: MemoryStore) {
  const visibility = (agentId: string) => ({
    agentId,
    orgId: null,
    now: new Date('2030-01-01T00:00:00Z'),
  });
  return {
    a: await store.list({ visibility: visibility('agent-a'), filters: {}, includePlans: true }),
    b: await store.list({ visibility: visibility('agent-b'), filters: {}, includePlans: true }),
    audit: await store.readAudit({ limit: 1000 }),
    heads: await store.auditHeads(),
  };
}

export function invalidInputSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;

  /** `[first, <hole>, last]`: `map` and `every` skip the hole. */
  const withHole = <T>(first: T, last: T): T[] => {
    const items = new Array<T>(3);
    items[0] = first;
    items[2] = last;
    return items;
  };
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  let deep: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < 20; i += 1) deep = { nested: deep };

  const badRemember: [string, unknown][] = [
    ['empty content', { content: '' }],
    ['blank content', { content: ' \n\t ' }],
    ['content of NEXT LINE only (White_Space that trim() keeps)', { content: '\u0085' }],
    ['non-string content', { content: 42 }],
    ['missing content', {}],
    ['content with NUL', { content: 'a\u0000b' }],
    ['content with a lone surrogate', { content: 'a\uD800b' }],
    ['content over the size limit', { content: 'x'.repeat(2001) }],
    ['unknown memory type', { content: 'x', memoryType: 'dream' }],
    ['unknown scope', { content: 'x', scope: 'secret' }],
    ['importance above 1', { content: 'x', importance: 1.5 }],
    ['negative importance', { content: 'x', importance: -0.1 }],
    ['NaN importance', { content: 'x', importance: Number.NaN }],
    ['string importance', { content: 'x', importance: '0.5' }],
    ['reserved plan tag', { content: 'x', tags: ['__experience_plan__'] }],
    ['other reserved tag', { content: 'x', tags: ['__system__'] }],
    ['blank tag', { content: 'x', tags: [''] }],
    ['tag with a newline', { content: 'x', tags: ['a\nb'] }],
    ['tags not an array', { content: 'x', tags: 'a' }],
    ['non-string tag', { content: 'x', tags: [1] }],
    ['tags with a hole', { content: 'x', tags: withHole('a', 'b') }],
    ['metadata array', { content: 'x', metadata: [] }],
    ['metadata null', { content: 'x', metadata: null }],
    ['metadata Date', { content: 'x', metadata: new Date() }],
    ['metadata with a Date value', { content: 'x', metadata: { at: new Date() } }],
    ['metadata with NaN', { content: 'x', metadata: { n: Number.NaN } }],
    ['metadata with Infinity', { content: 'x', metadata: { n: Number.POSITIVE_INFINITY } }],
    ['metadata with a function', { content: 'x', metadata: { f: () => 1 } }],
    ['metadata with undefined', { content: 'x', metadata: { u: undefined } }],
    ['metadata with a bigint', { content: 'x', metadata: { b: 1n } }],
    [
      'metadata with __proto__',
      { content: 'x', metadata: JSON.parse('{"__proto__": {"polluted": true}}') },
    ],
    ['cyclic metadata', { content: 'x', metadata: cyclic }],
    ['metadata array with a hole', { content: 'x', metadata: { list: withHole(1, 2) } }],
    ['metadata with a symbol key', { content: 'x', metadata: { x: 1, [Symbol('s')]: 2 } }],
    ['too deep metadata', { content: 'x', metadata: deep }],
    ['blank thread id', { content: 'x', threadId: ' ' }],
    ['invalid expiresAt', { content: 'x', expiresAt: new Date('nope') }],
    ['expiresAt in the past', { content: 'x', expiresAt: new Date('2025-01-01T00:00:00Z') }],
    ['an agent id field', { content: 'x', agentId: 'agent-b' }],
    ['not an object', 'just text'],
  ];

  async function seeded(): Promise<Fixture> {
    const fixture = await h.open({ limits: { maxContentBytes: 2000 } });
    const a = fixture.engine.as('agent-a');
    const { id } = await a.remember({
      content: 'existing memory',
      scope: 'shared',
      tags: ['seed'],
    });
    await a.share({ recordId: id, with: ['agent-b'], permission: 'read' });
    return fixture;
  }

  describe('invalid input', () => {
    it('rejects every bad remember input with INVALID_INPUT and changes nothing', async () => {
      const { engine, store } = await seeded();
      const before = await snapshot(store);
      for (const [label, input] of badRemember) {
        const code = await codeOf(engine.as('agent-a').remember(input as never));
        expect({ label, code }).toEqual({ label, code: 'INVALID_INPUT' });
      }
      expect(await snapshot(store)).toEqual(before);
      expect(({} as Record<string, unknown>).polluted).toBe(undefined);
    });

    it('takes every size limit exactly, and refuses one past it naming the field', async () => {
      const { engine, store } = await h.open({ limits: { maxContentBytes: 2000 } });
      const a = engine.as('agent-a');
      const tags = (count: number) => Array.from({ length: count }, (_, i) => `t${i}`);
      /** `levels` objects, each the only member of the one around it. */
      const nested = (levels: number) => {
        let value: unknown = 1;
        for (let i = 0; i < levels; i += 1) value = { n: value };
        return value as Record<string, unknown>;
      };
      // `{"s":"` and `"}` are 8 bytes around the string.
      const sized = (bytes: number) => ({ s: 'x'.repeat(bytes - 8) });
      const atLimit: [string, Record<string, unknown>][] = [
        ['2000 bytes of content', { content: 'x'.repeat(2000) }],
        ['2000 bytes of two-byte characters', { content: 'é'.repeat(1000) }],
        ['64 tags', { content: 'tags', tags: tags(64) }],
        ['a tag of 128 characters', { content: 'tag', tags: ['t'.repeat(128)] }],
        ['a thread id of 256 characters', { content: 'thread', threadId: 't'.repeat(256) }],
        ['a source type of 256 characters', { content: 'source', sourceType: 's'.repeat(256) }],
        ['64 KiB of metadata', { content: 'metadata', metadata: sized(64 * 1024) }],
        ['metadata 16 levels deep', { content: 'deep', metadata: nested(16) }],
      ];
      for (const [label, input] of atLimit) {
        const { id } = await a.remember(input as never);
        const { content, tags: kept, threadId, sourceType, metadata } = await a.get(id);
        expect({ label, content, tags: kept, threadId, sourceType, metadata }).toEqual({
          label,
          content: input.content,
          tags: input.tags ?? [],
          threadId: input.threadId ?? null,
          sourceType: input.sourceType ?? null,
          metadata: input.metadata ?? {},
        });
      }
      const before = await snapshot(store);
      const pastLimit: [Record<string, unknown>, string][] = [
        [{ content: 'x'.repeat(2001) }, 'content'],
        [{ content: `${'é'.repeat(1000)}x` }, 'content'],
        [{ content: 'tags', tags: tags(65) }, 'tags'],
        [{ content: 'tag', tags: ['t', 't'.repeat(129)] }, 'tags[1]'],
        [{ content: 'thread', threadId: 't'.repeat(257) }, 'threadId'],
        [{ content: 'source', sourceType: 's'.repeat(257) }, 'sourceType'],
        [{ content: 'metadata', metadata: sized(64 * 1024 + 1) }, 'metadata'],
        [{ content: 'deep', metadata: nested(17) }, `metadata${'.n'.repeat(16)}`],
      ];
      for (const [input, field] of pastLimit) {
        await expect(a.remember(input as never)).rejects.toMatchObject({
          code: 'INVALID_INPUT',
          details: { field },
        });
      }
      expect(await snapshot(store)).toEqual(before);
    });

    it('refuses an expiry at the present instant, and takes one a millisecond later', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const now = clock.now();
      const later = new Date(now.getTime() + 1);
      const { id: recordId } = await a.remember({ content: 'to share', scope: 'shared' });
      const before = await snapshot(store);
      const refused = [
        [a.remember({ content: 'expiring', expiresAt: now }), 'expiresAt'],
        [
          a.rememberMany([{ content: 'fine' }, { content: 'expiring', expiresAt: now }]),
          'inputs[1].expiresAt',
        ],
        [a.share({ recordId, with: ['agent-c'], expiresAt: now }), 'expiresAt'],
      ] as const;
      for (const [pending, field] of refused) {
        await expect(pending).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { field } });
      }
      expect(await snapshot(store)).toEqual(before);

      const { id } = await a.remember({ content: 'expiring', expiresAt: later });
      expect((await a.get(id)).expiresAt).toEqual(later);
      await a.share({ recordId, with: ['agent-c'], expiresAt: later });
      expect((await engine.as('agent-c').get(recordId)).id).toBe(recordId);
      clock.advance(1);
      expect(await codeOf(engine.as('agent-c').get(recordId))).toBe('NOT_FOUND');
      expect(await codeOf(a.get(id))).toBe('NOT_FOUND');
    });

    it('rejects bad agent and org ids when binding a handle', async () => {
      const { engine } = await h.open();
      for (const id of ['', 'a b', 'a/b', 'ä', 'x'.repeat(257), 42]) {
        expect(() => engine.as(id as string)).toThrow(
          expect.objectContaining({ code: 'INVALID_INPUT' }),
        );
      }
      expect(() => engine.as('ok', { orgId: 'bad org' })).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
      expect(engine.as('A.b_c-9').principal).toEqual({ agentId: 'A.b_c-9', orgId: null });
    });

    it('rejects ids from a custom id generator that get and forget could not take back', async () => {
      const { store, clock } = await h.open();
      for (const id of ['x'.repeat(257), '', 42, 'tab\there']) {
        const engine = createEngine({ store, clock, ids: () => id as string });
        await expect(engine.as('agent-a').remember({ content: 'note' })).rejects.toMatchObject({
          code: 'INVALID_INPUT',
          details: { field: 'options.ids' },
        });
      }
      expect(await snapshot(store)).toEqual({ a: [], b: [], audit: [], heads: [] });
    });

    it('rejects what a custom clock returns unless it is a valid Date, and changes nothing', async () => {
      const { engine: seeder, store } = await h.open();
      const { id } = await seeder.as('agent-a').remember({ content: 'a note on clocks' });
      const before = await snapshot(store);
      for (const now of [Date.now(), '2026-01-01T00:00:00.000Z', new Date(Number.NaN), null]) {
        const engine = createEngine({ store, clock: { now: () => now as Date } });
        const a = engine.as('agent-a');
        for (const call of [
          () => a.remember({ content: 'another note' }),
          () => a.recall({ query: 'note' }),
          () => a.get(id),
          () => a.forget({ ids: [id] }),
        ]) {
          await expect(call()).rejects.toMatchObject({
            code: 'INVALID_INPUT',
            details: { field: 'options.clock' },
          });
        }
      }
      expect(await snapshot(store)).toEqual(before);
    });

    it('rejects bad recall, get, forget and share input with INVALID_INPUT and changes nothing', async () => {
      const { engine, store } = await seeded();
      const before = await snapshot(store);
      const a = engine.as('agent-a');
      const calls: [string, () => Promise<unknown>][] = [
        ['blank query', () => a.recall({ query: '  ' })],
        ['limit 0', () => a.recall({ query: 'x', limit: 0 })],
        ['limit 101', () => a.recall({ query: 'x', limit: 101 })],
        ['fractional limit', () => a.recall({ query: 'x', limit: 1.5 })],
        ['unknown strategy', () => a.recall({ query: 'x', strategy: 'fuzzy' as never })],
        ['unknown filter', () => a.recall({ query: 'x', filters: { colour: 'red' } as never })],
        ['bad minImportance', () => a.recall({ query: 'x', filters: { minImportance: 2 } })],
        [
          'bad memoryTypes',
          () => a.recall({ query: 'x', filters: { memoryTypes: ['dream' as never] } }),
        ],
        ['non-boolean explain', () => a.recall({ query: 'x', explain: 'yes' as never })],
        ['blank id', () => a.get('')],
        ['getMany with a hole', () => a.getMany(withHole('id-000001', 'id-000001'))],
        [
          'rememberMany with a hole',
          () => a.rememberMany(withHole({ content: 'one' }, { content: 'two' })),
        ],
        ['forget ids with a hole', () => a.forget({ ids: withHole('id-000001', 'id-000001') })],
        [
          'recall tagsAny with a hole',
          () => a.recall({ query: 'x', filters: { tagsAny: withHole('seed', 'seed') } }),
        ],
        // The types refuse these too (checked by the typecheck); JavaScript callers get the error.
        // @ts-expect-error neither ids nor filters
        ['forget with neither ids nor filters', () => a.forget({})],
        // @ts-expect-error both ids and filters
        ['forget with both', () => a.forget({ ids: ['x'], filters: { threadId: 't' } })],
        ['forget with no ids', () => a.forget({ ids: [] })],
        ['forget with empty filters', () => a.forget({ filters: {} })],
        [
          'forget with unknown mode',
          () => a.forget({ ids: ['id-000001'], mode: 'shred' as never }),
        ],
        ['share with nobody', () => a.share({ recordId: 'id-000001', with: [] })],
        ['share with self', () => a.share({ recordId: 'id-000001', with: ['agent-a'] })],
        ['share with a bad agent id', () => a.share({ recordId: 'id-000001', with: ['bad id'] })],
        [
          'share with a hole',
          () => a.share({ recordId: 'id-000001', with: withHole('agent-c', 'agent-d') }),
        ],
        [
          'share an unknown permission',
          () => a.share({ recordId: 'id-000001', with: ['agent-c'], permission: 'own' as never }),
        ],
        [
          'share expiring in the past',
          () =>
            a.share({
              recordId: 'id-000001',
              with: ['agent-c'],
              expiresAt: new Date('2020-01-01'),
            }),
        ],
      ];
      for (const [label, call] of calls) {
        expect({ label, code: await codeOf(call()) }).toEqual({ label, code: 'INVALID_INPUT' });
      }
      expect(await snapshot(store)).toEqual(before);
    });
  });
}
