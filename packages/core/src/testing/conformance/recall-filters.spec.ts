import type { RecordFilters } from '../../ports/memory-store.js';
import type { Harness, TestApi } from './harness.js';

const LONG_THREAD = `thread-${'x'.repeat(249)}`;

export function recallFiltersSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('recall: filters', () => {
    it('applies each filter exactly, inside the query', async () => {
      const { engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const ids: string[] = [];
      const add = async (input: Parameters<typeof a.remember>[0]) => {
        ids.push((await a.remember(input)).id);
        clock.advance(60_000);
      };
      await add({
        content: 'project alpha kickoff',
        memoryType: 'episodic',
        tags: ['work', 'alpha'],
        importance: 0.9,
        threadId: 't1',
      });
      await add({
        content: 'project alpha budget',
        memoryType: 'semantic',
        tags: ['work'],
        importance: 0.4,
        threadId: 't1',
      });
      await add({
        content: 'project beta retro',
        memoryType: 'procedural',
        tags: ['alpha', 'retro'],
        importance: 0.7,
        scope: 'public',
      });
      await add({
        content: 'project gamma idea',
        memoryType: 'working',
        tags: [],
        importance: 0.1,
        scope: 'shared',
        threadId: LONG_THREAD,
      });
      const [r1, r2, r3, r4] = ids;
      const find = async (filters: RecordFilters) =>
        (await a.recall({ query: 'project', filters, limit: 100 })).hits
          .map((hit) => hit.record.id)
          .sort();
      const t0 = new Date('2026-01-01T00:00:00.000Z').getTime();
      expect(await find({ memoryTypes: ['episodic', 'working'] })).toEqual([r1, r4]);
      expect(await find({ scopes: ['public', 'shared'] })).toEqual([r3, r4]);
      expect(await find({ tagsAny: ['alpha', 'retro'] })).toEqual([r1, r3]);
      expect(await find({ tagsAll: ['work', 'alpha'] })).toEqual([r1]);
      expect(await find({ minImportance: 0.7 })).toEqual([r1, r3]);
      expect(await find({ createdAfter: new Date(t0 + 60_000) })).toEqual([r2, r3, r4]);
      expect(await find({ createdBefore: new Date(t0 + 120_000) })).toEqual([r1, r2]);
      expect(await find({ threadId: 't1' })).toEqual([r1, r2]);
      expect(await find({ tagsAny: ['work'], minImportance: 0.5, threadId: 't1' })).toEqual([r1]);
      expect(await find({ tagsAny: ['nope'] })).toEqual([]);
      // A thread id as long as remember takes (256) names its thread in a filter too.
      expect(await find({ threadId: LONG_THREAD })).toEqual([r4]);
    });

    it('refuses an empty memoryTypes, scopes or tagsAny list, which no record passes, rather than widening the query', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const work = await a.remember({ content: 'project kickoff', tags: ['work'] });
      const other = await a.remember({ content: 'project idea', memoryType: 'semantic' });
      const before = await store.readAudit({ limit: 100 });
      for (const filters of [
        { tagsAny: [] },
        { memoryTypes: [] },
        { scopes: [] },
        { memoryTypes: ['episodic'], tagsAny: [] },
      ] as RecordFilters[]) {
        await expect(a.recall({ query: 'project', filters })).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
        await expect(a.forget({ filters })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      }
      expect(await store.readAudit({ limit: 100 })).toEqual(before);
      expect((await a.getMany([work.id, other.id])).map((record) => record.id)).toEqual([
        work.id,
        other.id,
      ]);
      // Every record has all of no tags: an empty tagsAll filters nothing out.
      const all = await a.recall({ query: 'project', filters: { tagsAll: [] } });
      expect(all.hits.map((hit) => hit.record.id).sort()).toEqual([work.id, other.id]);
    });
  });
}
