import { createEngine } from '../../engine/create-engine.js';
import { DEFAULT_LANE_WEIGHTS, RRF_K } from '../../engine/fusion.js';
import type { Embedder } from '../../ports/embedder.js';
import type { RecordFilters } from '../../ports/memory-store.js';
import { cosineReference } from '../bm25-reference.js';
import { createHashEmbedder } from '../hash-embedder.js';
import type { Harness, TestApi } from './harness.js';

const CORPUS = [
  'alpine lakes and mountain hiking trails',
  'mountain biking in the alps',
  'recipes for sourdough bread',
  'bread baking with rye flour',
  'hiking boots for wet trails',
];

/**
 * The records of `CORPUS` (stored as `ids`, in order) ranked for `query` by
 * the reference cosine rounded to 10 decimals (as `searchVector` rounds it,
 * so that equal similarities summed apart in the last bit tie), best first,
 * ties by id; records with no defined similarity are left out.
 */
async function referenceRanking(
  embedder: Embedder,
  ids: readonly string[],
  query: string,
): Promise<{ id: string; score: number }[]> {
  const vectors = await embedder.embed(CORPUS);
  const [vector] = await embedder.embed([query]);
  return ids
    .map((id, i) => ({
      id,
      score:
        Math.round(cosineReference(vector as Float32Array, vectors[i] as Float32Array) * 1e10) /
        1e10,
    }))
    .filter((e) => Number.isFinite(e.score))
    .sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : 1));
}

export function recallSemanticSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('recall: semantic and hybrid', () => {
    it('ranks by cosine similarity exactly as the reference', async () => {
      const embedder = createHashEmbedder({ dimensions: 32 });
      const { engine } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const ids = [];
      for (const content of CORPUS) ids.push((await a.remember({ content })).id);
      const expected = await referenceRanking(embedder, ids, 'mountain hiking trails');
      const result = await a.recall({
        query: 'mountain hiking trails',
        strategy: 'semantic',
        limit: 100,
      });
      expect(result.strategy).toBe('semantic');
      expect(result.hits.map((hit) => hit.record.id)).toEqual(expected.map((e) => e.id));
      for (const [i, hit] of result.hits.entries()) {
        expect(hit.score).toBeCloseTo(expected[i]?.score as number, 5);
      }
    });

    it('ranks equal similarities that doubles sum apart in the last bit as a tie, by id, as the reference does', async () => {
      // The first two records' vectors hold the same values in reverse order: equal cosines
      // with the query, 0.811971650797975 and …751 as the products are summed.
      const [x, y, z] = [0.5215245485305786, 0.9290042519569397, 0.049408067017793655];
      const vectors = new Map([
        [CORPUS[0], [x, y, z]],
        [CORPUS[1], [z, y, x]],
        ['query', [1, 1, 1]],
      ]);
      const embedder: Embedder = {
        dimensions: 3,
        semantic: true,
        maxBatchSize: 16,
        embed: async (texts) =>
          texts.map((text) => Float32Array.from(vectors.get(text) ?? [0, 0, 1])),
      };
      const { engine } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const ids = [];
      for (const content of CORPUS) ids.push((await a.remember({ content })).id);
      const expected = await referenceRanking(embedder, ids, 'query');
      expect(expected.slice(0, 2)).toEqual([
        { id: ids[0], score: 0.8119716508 },
        { id: ids[1], score: 0.8119716508 },
      ]);
      const { hits } = await a.recall({ query: 'query', strategy: 'semantic', limit: 2 });
      expect(hits.map((hit) => ({ id: hit.record.id, score: hit.score }))).toEqual(
        expected.slice(0, 2),
      );
    });

    it('breaks ties in similarity by id, ascending', async () => {
      const { engine } = await h.open({ embedder: createHashEmbedder({ dimensions: 16 }) });
      const a = engine.as('agent-a', { orgId: 'o' });
      const first = await a.remember({ content: 'tie note', scope: 'private' });
      await a.remember({ content: 'tie note', scope: 'public' });
      await a.remember({ content: 'tie note', scope: 'global' });
      const hits = (await a.recall({ query: 'tie note', strategy: 'semantic', limit: 1 })).hits;
      expect(hits.map((hit) => hit.record.id)).toEqual([first.id]);
    });

    it('never returns a record whose similarity is undefined (a zero vector), even when it would fill the limit', async () => {
      const embedder = createHashEmbedder({ dimensions: 32 });
      const { engine } = await h.open({ embedder });
      const a = engine.as('agent-a');
      // Only stop words: no terms, so the hash embedder gives a zero vector (cosine NaN).
      const zero = ['the and of', 'to be or not', 'it is what it is', 'we were there'];
      for (const content of zero) await a.remember({ content });
      const ids = [];
      for (const content of CORPUS) ids.push((await a.remember({ content })).id);
      const expected = await referenceRanking(embedder, ids, 'mountain hiking trails');
      for (const limit of [1, 2, 100]) {
        const result = await a.recall({
          query: 'mountain hiking trails',
          strategy: 'semantic',
          limit,
        });
        expect(result.hits.map((hit) => hit.record.id)).toEqual(
          expected.slice(0, limit).map((e) => e.id),
        );
      }
      // A query with no terms has a zero vector: nothing is similar to it.
      expect((await a.recall({ query: 'what is it', strategy: 'semantic' })).hits).toEqual([]);
    });

    it('ranks every record with a similarity ahead of however many without one, in a thread too', async () => {
      const embedder = createHashEmbedder({ dimensions: 32 });
      const { engine } = await h.open({ embedder });
      const a = engine.as('agent-a');
      // Zero vectors (stop words only), with smaller ids than the others, and more of them than
      // a limit plus any margin of candidates a store may take before it scores exactly.
      await a.rememberMany(
        Array.from({ length: 200 }, (_, i) => ({
          content: 'the '.repeat(i + 1).trim(),
          threadId: 'thread-1',
        })),
      );
      // One shared with agent-a too (in PostgreSQL, another branch of the scan).
      const b = engine.as('agent-b');
      const shared = await b.remember({ content: 'of the', scope: 'shared', threadId: 'thread-1' });
      await b.share({ recordId: shared.id, with: ['agent-a'] });
      const ids = [];
      for (const content of CORPUS) {
        ids.push((await a.remember({ content, threadId: 'thread-1' })).id);
      }
      const expected = (await referenceRanking(embedder, ids, 'mountain hiking trails')).map(
        (e) => e.id,
      );
      expect(expected).toHaveLength(CORPUS.length);
      for (const filters of [{}, { threadId: 'thread-1' }]) {
        for (const limit of [1, 5, 100]) {
          const { hits } = await a.recall({
            query: 'mountain hiking trails',
            strategy: 'semantic',
            limit,
            filters,
          });
          expect({ filters, limit, ids: hits.map((hit) => hit.record.id) }).toEqual({
            filters,
            limit,
            ids: expected.slice(0, limit),
          });
        }
      }
    });

    it('applies each filter to semantic recall exactly, ranking what passes as the reference', async () => {
      const embedder = createHashEmbedder({ dimensions: 32 });
      const { engine, clock } = await h.open({ embedder });
      const a = engine.as('agent-a', { orgId: 'o' });
      // CORPUS in order, a minute apart, each with other attributes. Most filters below leave out
      // the best matches: a store must filter before it takes its top, not after.
      const attributes = [
        { memoryType: 'episodic', tags: ['outdoor', 'alps'], importance: 0.9, threadId: 't1' },
        { memoryType: 'semantic', tags: ['outdoor'], importance: 0.3, scope: 'public' },
        { memoryType: 'procedural', tags: ['food'], importance: 0.6, threadId: 't2' },
        { memoryType: 'episodic', tags: ['food', 'alps'], importance: 0.2, scope: 'shared' },
        { memoryType: 'working', tags: [], importance: 0.7, threadId: 't1' },
      ] as const;
      const ids: string[] = [];
      for (const [i, content] of CORPUS.entries()) {
        ids.push((await a.remember({ content, ...attributes[i] })).id);
        clock.advance(60_000);
      }
      const ranking = (await referenceRanking(embedder, ids, 'mountain hiking trails')).map(
        (e) => e.id,
      );
      const t0 = new Date('2026-01-01T00:00:00.000Z').getTime();
      const cases: [RecordFilters, number[]][] = [
        [{ memoryTypes: ['episodic', 'procedural'] }, [0, 2, 3]],
        [{ scopes: ['public', 'shared'] }, [1, 3]],
        [{ tagsAny: ['alps', 'food'] }, [0, 2, 3]],
        [{ tagsAll: ['food', 'alps'] }, [3]],
        [{ minImportance: 0.6 }, [0, 2, 4]],
        [{ createdAfter: new Date(t0 + 60_000) }, [1, 2, 3, 4]],
        [{ createdBefore: new Date(t0 + 180_000) }, [0, 1, 2]],
        [{ threadId: 't1' }, [0, 4]],
        [{ threadId: 't3' }, []],
        [{ tagsAny: ['food', 'outdoor'], minImportance: 0.5, createdAfter: new Date(t0 + 1) }, [2]],
      ];
      for (const [filters, passing] of cases) {
        const expected = ranking.filter((id) => passing.some((i) => ids[i] === id));
        for (const limit of [1, 100]) {
          const result = await a.recall({
            query: 'mountain hiking trails',
            strategy: 'semantic',
            filters,
            limit,
          });
          expect([filters, result.hits.map((hit) => hit.record.id)]).toEqual([
            filters,
            expected.slice(0, limit),
          ]);
        }
      }
    });

    it('leaves out records expired at the time of the recall, from its expiry on', async () => {
      const embedder = createHashEmbedder({ dimensions: 32 });
      const { engine, clock } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const hour = 3_600_000;
      const t0 = clock.now().getTime();
      // The records are CORPUS's, in its order: the three best matches expire, the best first.
      const expiries = [t0 + hour, null, t0 + 3 * hour, null, t0 + 2 * hour];
      const ids: string[] = [];
      for (const [i, content] of CORPUS.entries()) {
        const expiresAt = expiries[i];
        ids.push(
          (
            await a.remember({
              content,
              tags: i % 2 === 0 ? ['even'] : [],
              ...(expiresAt === null || expiresAt === undefined
                ? {}
                : { expiresAt: new Date(expiresAt) }),
            })
          ).id,
        );
      }
      const ranking = (await referenceRanking(embedder, ids, 'mountain hiking trails')).map(
        (e) => e.id,
      );
      const recall = async (limit: number, filters: RecordFilters = {}) =>
        (
          await a.recall({ query: 'mountain hiking trails', strategy: 'semantic', filters, limit })
        ).hits.map((hit) => hit.record.id);
      // At each record's expiry exactly, and after, the record is gone.
      for (const [at, expired] of [
        [t0 + hour - 1, []],
        [t0 + hour, [0]],
        [t0 + 2 * hour, [0, 4]],
        [t0 + 3 * hour + 1, [0, 4, 2]],
      ] as const) {
        clock.set(new Date(at));
        const live = ranking.filter((id) => !expired.some((i) => ids[i] === id));
        const even = live.filter((id) => ids.indexOf(id) % 2 === 0);
        expect([at, await recall(1), await recall(100)]).toEqual([at, live.slice(0, 1), live]);
        expect([
          at,
          await recall(1, { tagsAny: ['even'] }),
          await recall(100, { tagsAny: ['even'] }),
        ]).toEqual([at, even.slice(0, 1), even]);
      }
    });

    it('fuses lexical, semantic and recency with RRF (k = 60) and explains every lane', async () => {
      const embedder = createHashEmbedder({ dimensions: 32 });
      const { engine, clock } = await h.open({ embedder });
      const a = engine.as('agent-a');
      for (const content of CORPUS) {
        await a.remember({ content });
        clock.advance(1000);
      }
      const result = await a.recall({ query: 'hiking trails', explain: true, limit: 100 });
      expect(result.strategy).toBe('hybrid');
      expect(result.hits.length).toBeGreaterThan(0);
      for (const hit of result.hits) {
        const lanes = hit.explain ?? {};
        const expected = Object.entries(lanes).reduce(
          (sum, [lane, { rank }]) =>
            sum + DEFAULT_LANE_WEIGHTS[lane as keyof typeof DEFAULT_LANE_WEIGHTS] / (RRF_K + rank),
          0,
        );
        expect(hit.score).toBeCloseTo(expected, 12);
        expect(lanes.recency).toBeDefined();
      }
      const scores = result.hits.map((hit) => hit.score);
      expect(scores).toEqual([...scores].sort((x, y) => y - x));
      const lexical = await a.recall({ query: 'hiking trails', strategy: 'lexical', limit: 100 });
      const ranks = Object.fromEntries(lexical.hits.map((hit, i) => [hit.record.id, i + 1]));
      for (const hit of result.hits) expect(hit.explain?.lexical?.rank).toBe(ranks[hit.record.id]);
      expect(
        (await a.recall({ query: 'hiking trails' })).hits.every((hit) => hit.explain === undefined),
      ).toBe(true);
    });

    it('fixes the embedding size with the first vector: other sizes are DIMENSION_MISMATCH and write nothing', async () => {
      const { engine, store, clock } = await h.open({
        embedder: createHashEmbedder({ dimensions: 8 }),
      });
      expect(
        (await engine.as('agent-a').recall({ query: 'nothing stored yet', strategy: 'semantic' }))
          .hits,
      ).toEqual([]);
      await engine.as('agent-a').remember({ content: 'eight dimensions' });
      const other = createEngine({
        store,
        clock,
        embedder: createHashEmbedder({ dimensions: 16 }),
      });
      const before = await store.readAudit({ limit: 100 });
      await expect(
        other.as('agent-a').remember({ content: 'sixteen dimensions' }),
      ).rejects.toMatchObject({
        code: 'DIMENSION_MISMATCH',
        details: { expected: 8, actual: 16 },
      });
      await expect(
        other.as('agent-a').recall({ query: 'dimensions', strategy: 'semantic' }),
      ).rejects.toMatchObject({
        code: 'DIMENSION_MISMATCH',
      });
      expect(await store.readAudit({ limit: 100 })).toEqual(before);
      expect(
        (await engine.as('agent-a').recall({ query: 'dimensions', strategy: 'semantic' })).hits,
      ).toHaveLength(1);
    });

    it('is a typed error under the no-op embedder, and auto falls back to lexical', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      await a.remember({ content: 'mountain hiking' });
      await expect(a.recall({ query: 'hiking', strategy: 'semantic' })).rejects.toMatchObject({
        code: 'EMBEDDER_NOT_CONFIGURED',
      });
      await expect(a.recall({ query: 'hiking', strategy: 'hybrid' })).rejects.toMatchObject({
        code: 'EMBEDDER_NOT_CONFIGURED',
      });
      expect((await store.readAudit({ limit: 10 })).map((e) => e.op)).toEqual(['remember']);
      const auto = await a.recall({ query: 'hiking' });
      expect([auto.strategy, auto.hits.map((hit) => hit.record.content)]).toEqual([
        'lexical',
        ['mountain hiking'],
      ]);
    });
  });
}
