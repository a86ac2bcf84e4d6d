import { createEngine } from '../../engine/create-engine.js';
import { planAccess } from '../../engine/plan-access.js';
import type { RecordFilters } from '../../ports/memory-store.js';
import type { MemoryType, Scope } from '../../records.js';
import { bm25Reference } from '../bm25-reference.js';
import { createHashEmbedder } from '../hash-embedder.js';
import type { Harness, TestApi } from './harness.js';

const CORPUS = [
  'The cat sat on the mat',
  'The dog chased the cat around the garden',
  'Cats and dogs living together',
  'A bird in the hand is worth two in the bush',
  'The cat, the cat, the cat: a cat poem',
  'Garden birds: robins, wrens and a cat that watches them',
];

export function recallLexicalSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('recall: lexical (BM25)', () => {
    it('ranks exactly as the BM25 reference, ties broken by id', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const docs = [];
      for (const content of CORPUS) docs.push({ id: (await a.remember({ content })).id, content });
      for (const query of ['cat', 'cat garden', 'birds in the garden', 'dogs']) {
        const result = await a.recall({ query, strategy: 'lexical', limit: 100 });
        const expected = bm25Reference(docs, query);
        expect(result.strategy).toBe('lexical');
        expect(result.hits.map((hit) => hit.record.id)).toEqual(expected.map((e) => e.id));
        for (const [i, hit] of result.hits.entries()) {
          expect(hit.score).toBeCloseTo(expected[i]?.score as number, 9);
        }
      }
      expect(
        (await a.recall({ query: 'cat', limit: 100 })).hits.map((hit) => hit.record.id),
      ).toEqual([
        'id-000009',
        'id-000001',
        // "Cats" matches "cat": the analyzer stems.
        'id-000005',
        'id-000003',
        'id-000011',
      ]);
    });

    it('breaks ties by id in byte order, in lexical and hybrid recall alike', async () => {
      const { store, clock } = await h.open();
      // Byte order: z (7A) < Ａ (EF BC A1) < 😀 (F0 9F 98 80); UTF-16 puts 😀 (D83D) before Ａ (FF21).
      const marks = ['😀', 'Ａ', 'z'];
      let n = 0;
      const engine = createEngine({
        store,
        clock,
        embedder: createHashEmbedder({ dimensions: 8 }),
        // Without recency, the three records tie in every lane.
        laneWeights: { recency: 0 },
        ids: () => `id-${marks[n % 3]}-${n++}`,
      });
      const a = engine.as('agent-a');
      const ids: string[] = [];
      for (const scope of ['private', 'shared', 'public'] as const) {
        ids.push((await a.remember({ content: 'apple pie', scope })).id);
      }
      const byBytes = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      expect(byBytes).not.toEqual([...ids].sort());
      for (const strategy of ['lexical', 'hybrid'] as const) {
        const { hits } = await a.recall({ query: 'apple', strategy, explain: true });
        expect({ strategy, ids: hits.map((hit) => hit.record.id) }).toEqual({
          strategy,
          ids: byBytes,
        });
        if (strategy === 'hybrid') {
          // Created at the same instant: newest id first, in byte order.
          expect(hits.map((hit) => hit.explain?.recency?.rank)).toEqual([3, 2, 1]);
        }
      }
    });

    it('applies visibility before ranking, statistics and limit', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      // b's private records are far more relevant; they must neither show nor take slots or shift scores.
      for (let i = 0; i < 5; i += 1)
        await b.remember({ content: `secret secret secret plan ${i}` });
      const mine = [];
      for (const content of [
        'secret plan alpha',
        'the secret recipe',
        'a plan for secret',
        'nothing here',
        'secret',
      ]) {
        mine.push({ id: (await a.remember({ content })).id, content });
      }
      const result = await a.recall({ query: 'secret plan', limit: 3 });
      const expected = bm25Reference(mine, 'secret plan').slice(0, 3);
      expect(result.hits.map((hit) => hit.record.id)).toEqual(expected.map((e) => e.id));
      for (const [i, hit] of result.hits.entries()) {
        expect(hit.score).toBeCloseTo(expected[i]?.score as number, 9);
      }
      expect(result.hits.every((hit) => hit.record.agentId === 'agent-a')).toBe(true);
    });

    describe("keeps others' records out of every lexical query, and out of its statistics", () => {
      const hitIds = (result: { hits: { record: { id: string } }[] }) =>
        result.hits.map((hit) => hit.record.id);

      it('with an importance filter: no private record of another agent, no expired one of mine', async () => {
        const { engine, clock } = await h.open();
        const a = engine.as('agent-a');
        const mine = await a.remember({ content: 'alpha note', importance: 0.9 });
        await a.remember({
          content: 'alpha expiring',
          importance: 0.9,
          expiresAt: new Date(clock.now().getTime() + 1000),
        });
        await engine.as('agent-b').remember({ content: 'alpha secret of b', importance: 0.9 });
        clock.advance(1000);
        const filters = { minImportance: 0.5 };
        expect(hitIds(await a.recall({ query: 'alpha', strategy: 'lexical', filters }))).toEqual([
          mine.id,
        ]);
      });

      it('with a tag filter: no shared record of another agent without a grant', async () => {
        const { engine } = await h.open();
        const a = engine.as('agent-a');
        const mine = await a.remember({ content: 'alpha note', tags: ['t'] });
        await engine
          .as('agent-b')
          .remember({ content: 'alpha shared, not granted', tags: ['t'], scope: 'shared' });
        const filters = { tagsAny: ['t'] };
        expect(hitIds(await a.recall({ query: 'alpha', strategy: 'lexical', filters }))).toEqual([
          mine.id,
        ]);
      });

      it('with common terms and fewer hits than the limit: no shared record without a grant', async () => {
        const { engine } = await h.open();
        const a = engine.as('agent-a');
        const notes = await a.rememberMany(
          Array.from({ length: 40 }, (_, i) => ({ content: `alpha note n${i}` })),
        );
        const rare = await a.remember({ content: 'alpha gamma' });
        await engine.as('agent-b').remember({ content: 'gamma alpha of b', scope: 'shared' });
        const found = hitIds(
          await a.recall({ query: 'alpha gamma', strategy: 'lexical', limit: 100 }),
        );
        expect([...found].sort()).toEqual([rare.id, ...notes.map((note) => note.id)].sort());
        expect(found[0]).toBe(rare.id);
      });

      it("scores as the reference over what the caller sees: others' ungranted shared records do not count", async () => {
        const { engine } = await h.open();
        const a = engine.as('agent-a');
        const b = engine.as('agent-b');
        for (let i = 0; i < 5; i += 1) {
          await b.remember({
            content: `unrelated words of b ${i} ${'x '.repeat(20)}`,
            scope: 'shared',
          });
        }
        const docs = [];
        for (const content of [
          'secret plan alpha',
          'the secret recipe',
          'a plan for secret',
          'nothing here',
        ]) {
          docs.push({ id: (await a.remember({ content })).id, content });
        }
        const result = await a.recall({ query: 'secret plan', strategy: 'lexical', limit: 3 });
        const expected = bm25Reference(docs, 'secret plan').slice(0, 3);
        expect(hitIds(result)).toEqual(expected.map((entry) => entry.id));
        for (const [i, hit] of result.hits.entries()) {
          expect(hit.score).toBeCloseTo(expected[i]?.score as number, 9);
        }
      });
    });

    it('keeps an expired record out after more than a thousand forgets, lexical and semantic', async () => {
      const { engine, clock } = await h.open({ embedder: createHashEmbedder({ dimensions: 16 }) });
      const a = engine.as('agent-a');
      await a.rememberMany(
        Array.from({ length: 1100 }, (_, i) => ({ content: `filler note ${i}`, tags: ['filler'] })),
      );
      const { id } = await a.remember({
        content: 'ephemeral zebra',
        expiresAt: new Date(clock.now().getTime() + 60_000),
      });
      expect(
        (await a.recall({ query: 'zebra', strategy: 'lexical' })).hits.map((hit) => hit.record.id),
      ).toEqual([id]);
      expect((await a.forget({ filters: { tagsAny: ['filler'] } })).forgotten).toHaveLength(1100);
      clock.advance(60_000);
      for (const strategy of ['lexical', 'semantic'] as const) {
        expect((await a.recall({ query: 'zebra', strategy })).hits).toEqual([]);
      }
    });

    it('ranks as the reference when common terms hold most postings, as records come and go', async () => {
      const { engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      // "alpha" in every record, "beta" in one in four, "gamma" and "delta" rare: the common
      // terms of a query hold most of its postings and add little to a score.
      const docs: { id: string; content: string }[] = [];
      const mine = async (content: string, expiresAt?: Date) => {
        const { id } = await a.remember({ content, ...(expiresAt && { expiresAt }) });
        docs.push({ id, content });
        return id;
      };
      for (let i = 0; i < 40; i += 1) {
        const words = ['alpha', 'note', `n${i}`];
        if (i % 4 === 0) words.push('beta');
        if (i % 4 === 0 && i % 8 === 0) words.push('alpha', 'beta');
        if (i === 7 || i === 30) words.push('gamma');
        if (i === 12) words.push('delta');
        // Longer, so a lower score for gamma than i = 7, but more in all with beta.
        if (i === 30) words.push('beta', 'beta');
        await mine(words.join(' '));
      }
      await mine('alpha gamma gamma', new Date(clock.now().getTime() + 1000));
      // Shared with a, so visible to it, and never counted in a's own statistics.
      const theirs = {
        id: (await b.remember({ content: 'beta gamma alpha', scope: 'shared' })).id,
        content: 'beta gamma alpha',
      };
      await b.share({ recordId: theirs.id, with: ['agent-a'] });
      await b.remember({ content: 'gamma gamma delta beta' });
      const queries = [
        'alpha gamma',
        'gamma beta',
        'alpha beta delta',
        'alpha beta',
        'alpha',
        'note alpha',
      ];
      const check = async (visible: { id: string; content: string }[]) => {
        for (const query of queries) {
          for (const limit of [1, 2, 3, 5, 100]) {
            const result = await a.recall({ query, strategy: 'lexical', limit });
            const expected = bm25Reference(visible, query).slice(0, limit);
            expect({ query, limit, ids: result.hits.map((hit) => hit.record.id) }).toEqual({
              query,
              limit,
              ids: expected.map((e) => e.id),
            });
            for (const [i, hit] of result.hits.entries()) {
              expect(hit.score).toBeCloseTo(expected[i]?.score as number, 9);
            }
          }
        }
      };
      await check([...docs, theirs]);
      clock.advance(1000);
      const live = docs.filter((doc) => doc.content !== 'alpha gamma gamma');
      await check([...live, theirs]);
      const gone = [live[7]?.id, live[0]?.id, live[12]?.id] as string[];
      await a.forget({ ids: [gone[0] as string], mode: 'soft' });
      await a.forget({ ids: [gone[1] as string], mode: 'hard' });
      await a.forget({ ids: [gone[2] as string], mode: 'redact' });
      await check([...live.filter((doc) => !gone.includes(doc.id)), theirs]);
    });

    it('ranks with memory type, scope and tag filters over the records that pass, as records come and go', async () => {
      const { engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      type Doc = {
        id: string;
        content: string;
        memoryType: MemoryType;
        scope: Scope;
        tags: string[];
      };
      const docs: Doc[] = [];
      const add = async (
        author: typeof a,
        content: string,
        memoryType: MemoryType,
        scope: Scope,
        tags: string[],
        expiresAt?: Date,
      ) => {
        const { id } = await author.remember({
          content,
          memoryType,
          scope,
          tags,
          ...(expiresAt && { expiresAt }),
        });
        docs.push({ id, content, memoryType, scope, tags });
        return id;
      };
      // As long a tag as remember takes by default.
      const long = `long-${'k'.repeat(123)}`;
      const types = ['episodic', 'semantic', 'procedural'] as const;
      for (let i = 0; i < 48; i += 1) {
        const words = ['alpha', 'note', `n${i}`];
        if (i % 4 === 0) words.push('beta');
        if (i === 7 || i === 30 || i === 31) words.push('gamma');
        if (i === 12) words.push('delta');
        if (i === 30) words.push('beta', 'beta');
        const tags = [
          ...(i % 2 === 0 ? ['even'] : []),
          ...(i % 3 === 0 ? ['three'] : []),
          ...(i % 7 === 0 ? [long] : []),
        ];
        await add(
          a,
          words.join(' '),
          types[i % 3] as MemoryType,
          i % 5 === 0 ? 'public' : 'private',
          tags,
        );
      }
      const expiring = await add(
        a,
        'alpha gamma gamma',
        'episodic',
        'private',
        ['even', long],
        new Date(clock.now().getTime() + 1000),
      );
      // Visible to a (shared with it, public) but owned by b; b's private record is not.
      const shared = await add(b, 'beta gamma alpha', 'semantic', 'shared', ['even', 'three']);
      await b.share({ recordId: shared, with: ['agent-a'] });
      await add(b, 'gamma alpha beta note', 'episodic', 'public', ['three']);
      const hidden = await add(b, 'gamma gamma delta beta', 'episodic', 'private', ['even']);
      const filterSets: RecordFilters[] = [
        { memoryTypes: ['episodic'] },
        { memoryTypes: ['semantic', 'procedural'] },
        { scopes: ['public', 'shared'] },
        { memoryTypes: ['episodic'], scopes: ['private'] },
        { memoryTypes: ['working'] },
        { tagsAny: ['even'] },
        { tagsAny: ['three', long, 'none'] },
        { tagsAll: ['even', 'three'] },
        { tagsAll: ['even', 'even'] },
        { tagsAny: [long], tagsAll: ['even'], memoryTypes: ['episodic', 'procedural'] },
        { tagsAll: ['three'], scopes: ['public', 'shared'] },
        { tagsAny: ['none'] },
      ];
      const passes = (doc: Doc, filters: RecordFilters) =>
        (filters.memoryTypes?.includes(doc.memoryType) ?? true) &&
        (filters.scopes?.includes(doc.scope) ?? true) &&
        (filters.tagsAny?.some((tag) => doc.tags.includes(tag)) ?? true) &&
        (filters.tagsAll?.every((tag) => doc.tags.includes(tag)) ?? true);
      const check = async (visible: Doc[]) => {
        for (const filters of filterSets) {
          for (const query of ['alpha gamma', 'gamma beta', 'alpha beta delta', 'note alpha']) {
            for (const limit of [1, 3, 100]) {
              const result = await a.recall({ query, strategy: 'lexical', limit, filters });
              const passing = visible.filter((doc) => passes(doc, filters));
              const expected = bm25Reference(passing, query).slice(0, limit);
              expect({
                filters,
                query,
                limit,
                ids: result.hits.map((hit) => hit.record.id),
              }).toEqual({ filters, query, limit, ids: expected.map((e) => e.id) });
              for (const [i, hit] of result.hits.entries()) {
                expect(hit.score).toBeCloseTo(expected[i]?.score as number, 9);
              }
            }
          }
        }
      };
      const visible = docs.filter((doc) => doc.id !== hidden);
      await check(visible);
      clock.advance(1000);
      const live = visible.filter((doc) => doc.id !== expiring);
      await check(live);
      const gone = [live[7]?.id, live[0]?.id, live[12]?.id] as string[];
      await a.forget({ ids: [gone[0] as string], mode: 'soft' });
      await a.forget({ ids: [gone[1] as string], mode: 'hard' });
      await a.forget({ ids: [gone[2] as string], mode: 'redact' });
      await check(live.filter((doc) => !gone.includes(doc.id)));
    });

    it('ranks equal scores that doubles sum apart in the last bit as a tie, by id, as the reference does', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      // The same three term scores, in the other order: 1.6892574126301874 and …876 unrounded.
      const docs = [];
      for (const content of [
        'apple pear pear plum plum plum',
        'apple apple apple pear pear plum',
        'filler',
      ]) {
        docs.push({ id: (await a.remember({ content })).id, content });
      }
      const { hits } = await a.recall({ query: 'apple pear plum', strategy: 'lexical' });
      const expected = bm25Reference(docs, 'apple pear plum');
      expect(expected).toEqual([
        { id: docs[0]?.id, score: 1.6892574126 },
        { id: docs[1]?.id, score: 1.6892574126 },
      ]);
      expect(hits.map((hit) => ({ id: hit.record.id, score: hit.score }))).toEqual(expected);
    });

    it('rounds a score halfway between two 10-decimal values up, as every store rounds it', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      // 13 records of 137 terms in all, 3 with "alpha" ("alphas" stems to it): the first
      // scores 1.96810702045 exactly in double precision, 19681070204.5 at 10 decimals.
      const target = await a.remember({ content: 'alpha alpha t1 t2' });
      await a.remember({ content: 'alpha' });
      await a.remember({ content: 'alphas' });
      for (let i = 0; i < 10; i += 1) {
        const words = Array.from({ length: i === 9 ? 14 : 13 }, (_, j) => `w${i}x${j}`);
        await a.remember({ content: words.join(' ') });
      }
      const { hits } = await a.recall({ query: 'alpha', strategy: 'lexical' });
      expect(hits[0]?.record.id).toBe(target.id);
      // Half away from zero (DuckDB's round), not half to even (1.9681070204).
      expect(hits[0]?.score).toBe(1.9681070205);
    });

    it('finds words of scripts written without spaces, and of scripts with combining marks', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const tokyo = await a.remember({ content: '昨日、東京タワーに行きました。' });
      const chinese = await a.remember({ content: '我喜欢学习中文' });
      const thai = await a.remember({ content: 'ภาษาไทยง่ายมาก' });
      const hindi = await a.remember({ content: 'मुझे हिन्दी पसंद है' });
      await a.remember({ content: 'हम दिल्ली में रहते हैं' });
      const found = async (query: string) =>
        (await a.recall({ query, strategy: 'lexical' })).hits.map((hit) => hit.record.id);
      expect(await found('東京タワー')).toEqual([tokyo.id]);
      expect(await found('中文')).toEqual([chinese.id]);
      expect(await found('ไทย')).toEqual([thai.id]);
      expect(await found('हिन्दी')).toEqual([hindi.id]);
      expect(await found('大阪')).toEqual([]);
    });

    it('returns nothing for a query of stop words only, and respects the limit', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      for (let i = 0; i < 15; i += 1) await a.remember({ content: `note number ${i}` });
      expect((await a.recall({ query: 'the and of' })).hits).toEqual([]);
      expect((await a.recall({ query: 'note' })).hits).toHaveLength(10);
      expect(
        (await a.recall({ query: 'note', limit: 3 })).hits.map((hit) => hit.record.id),
      ).toEqual(['id-000001', 'id-000003', 'id-000005']);
    });

    it('never returns plans, deleted or expired records', async () => {
      const { engine, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const ordinary = await a.remember({ content: 'how do I reset my password' });
      await planAccess(a).writePlan({
        query: 'reset password',
        payload: { steps: [] },
        tokens: ['password', 'reset'],
      });
      const gone = await a.remember({ content: 'reset the password via email' });
      await a.forget({ ids: [gone.id] });
      await a.remember({
        content: 'password reset link expires',
        expiresAt: new Date(clock.now().getTime() + 1000),
      });
      clock.advance(1000);
      const result = await a.recall({ query: 'reset password' });
      expect(result.hits.map((hit) => hit.record.id)).toEqual([ordinary.id]);
    });

    it('counts accesses and audits the recall (not when read auditing is off)', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const { id } = await a.remember({ content: 'remember the milk' });
      clock.advance(5000);
      await a.recall({ query: 'milk' });
      const record = await a.get(id);
      expect([record.accessCount, record.lastAccessedAt]).toEqual([1, clock.now()]);
      const events = await store.readAudit({ limit: 10 });
      expect(events.map((e) => [e.op, e.recordIds])).toEqual([
        ['remember', [id]],
        ['recall', [id]],
      ]);
      expect(events[1]?.details).toMatchObject({ strategy: 'lexical', limit: 10 });
      const quiet = engine.with({ readAuditing: false }).as('agent-a');
      await quiet.recall({ query: 'milk' });
      expect(await store.readAudit({ limit: 10 })).toHaveLength(2);
      expect((await a.get(id)).accessCount).toBe(1);
    });
  });
}
