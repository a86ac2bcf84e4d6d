import { runInNewContext } from 'node:vm';
import { auditEventHash, GENESIS_HASH } from '../../audit/audit-event.js';
import { contentHash } from '../../hashing.js';
import { createHashEmbedder } from '../hash-embedder.js';
import { type Harness, START, type TestApi } from './harness.js';

export function rememberSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('remember', () => {
    it('stores a record with defaults and returns its id and content hash', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const result = await a.remember({ content: 'The user prefers dark mode' });
      const record = await a.get(result.id);
      expect(record).toEqual({
        id: 'id-000001',
        agentId: 'agent-a',
        orgId: null,
        content: 'The user prefers dark mode',
        memoryType: 'episodic',
        scope: 'private',
        importance: 0.5,
        tags: [],
        metadata: {},
        embedding: null,
        contentHash: result.contentHash,
        threadId: null,
        sourceType: null,
        createdAt: new Date(START),
        updatedAt: new Date(START),
        expiresAt: null,
        deletedAt: null,
        accessCount: 0,
        lastAccessedAt: null,
      });
      expect(result).toEqual({
        id: 'id-000001',
        contentHash: contentHash(record),
        deduplicated: false,
      });
      expect(result.contentHash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('round-trips every field exactly', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a', { orgId: 'org-1' });
      const metadata = {
        source: { url: 'https://example.test/ü', n: [1, 2.5, -3e-7] },
        ok: true,
        none: null,
      };
      const { id } = await a.remember({
        content: 'Ünïcödé 🚀 line\nbreak',
        memoryType: 'semantic',
        scope: 'public',
        importance: 0.25,
        tags: ['prefs', 'ui', 'prefs'],
        metadata,
        threadId: 'thread-7',
        sourceType: 'chat',
        expiresAt: new Date('2027-01-01T00:00:00.000Z'),
      });
      const record = await a.get(id);
      expect(record).toMatchObject({
        id: 'id-000001',
        agentId: 'agent-a',
        orgId: 'org-1',
        content: 'Ünïcödé 🚀 line\nbreak',
        memoryType: 'semantic',
        scope: 'public',
        importance: 0.25,
        tags: ['prefs', 'ui'],
        metadata,
        threadId: 'thread-7',
        sourceType: 'chat',
        expiresAt: new Date('2027-01-01T00:00:00.000Z'),
      });
      expect(record.contentHash).toBe(contentHash(record));
    });

    it('stores the embedder vector exactly', async () => {
      const embedder = createHashEmbedder({ dimensions: 16 });
      const { engine } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const { id } = await a.remember({ content: 'vectors are stored as float32' });
      const [expected] = await embedder.embed(['vectors are stored as float32']);
      expect((await a.get(id)).embedding).toEqual(expected);
    });

    it('appends a chained audit event in the same transaction', async () => {
      const { engine, store } = await h.open();
      const { id, contentHash: hash } = await engine.as('agent-a').remember({ content: 'audited' });
      const [event, ...rest] = await store.readAudit({ limit: 10 });
      expect(rest).toEqual([]);
      expect(event).toEqual({
        id: 'id-000002',
        chain: 'agent-a',
        seq: 1,
        at: new Date(START),
        principal: 'agent-a',
        op: 'remember',
        recordIds: [id],
        details: { contentHash: hash, scope: 'private', memoryType: 'episodic', plan: false },
        prevHash: GENESIS_HASH,
        hash: event ? auditEventHash(event) : 'missing',
      });
      expect(await store.auditHeads()).toEqual([{ chain: 'agent-a', seq: 1, hash: event?.hash }]);
    });

    it('fails with EMBEDDER_FAILED and writes nothing when the embedder throws', async () => {
      const failing = {
        dimensions: 4,
        semantic: true,
        maxBatchSize: 8,
        embed: async () => {
          throw new Error('boom');
        },
      };
      const { engine, store } = await h.open({ embedder: failing });
      await expect(engine.as('agent-a').remember({ content: 'x y z' })).rejects.toMatchObject({
        code: 'EMBEDDER_FAILED',
      });
      expect(await store.readAudit({ limit: 10 })).toEqual([]);
    });

    it('fails with EMBEDDER_FAILED and writes nothing for a vector outside the embedding bounds', async () => {
      const bad = [
        [Number.NaN, 1, 0, 0],
        [1, Number.POSITIVE_INFINITY, 0, 0],
        [2 ** 51, 1, 0, 0],
        [1e-30, 2e-30, 0, 1e-30],
      ];
      const returning = (vector: number[]) => ({
        dimensions: 4,
        semantic: true,
        maxBatchSize: 8,
        embed: async (texts: readonly string[]) => texts.map(() => Float32Array.from(vector)),
      });
      for (const vector of bad) {
        const { engine, store } = await h.open({ embedder: returning(vector) });
        await expect(engine.as('agent-a').remember({ content: 'x y z' })).rejects.toMatchObject({
          code: 'EMBEDDER_FAILED',
        });
        expect(await store.readAudit({ limit: 10 })).toEqual([]);
      }
      // The bounds themselves, and a zero vector, are fine.
      for (const vector of [
        [2 ** 50, -(2 ** 50), 0, 1],
        [2 ** -50, 0, 0, 0],
        [0, 0, 0, 0],
      ]) {
        const { engine } = await h.open({ embedder: returning(vector) });
        expect((await engine.as('agent-a').remember({ content: 'x y z' })).deduplicated).toBe(
          false,
        );
      }
    });

    it('fails with EMBEDDER_FAILED and writes nothing when the embedder returns no Float32Array', async () => {
      for (const [vector, returned] of [
        [[1, 0, 0, 0], 'an Array'],
        [Float64Array.from([1, 0, 0, 0]), 'a Float64Array'],
        [null, 'null'],
        ['1,0,0,0', 'a string'],
      ] as const) {
        const embedder = {
          dimensions: 4,
          semantic: true,
          maxBatchSize: 8,
          embed: async (texts: readonly string[]) => texts.map(() => vector as never),
        };
        const { engine, store } = await h.open({ embedder });
        await expect(engine.as('agent-a').remember({ content: 'x y z' })).rejects.toMatchObject({
          code: 'EMBEDDER_FAILED',
          message: `embedder returned ${returned} where a Float32Array was expected`,
        });
        expect(await store.readAudit({ limit: 10 })).toEqual([]);
      }
    });

    it('takes a Float32Array made in another realm (a vm context, a sandboxed test runner)', async () => {
      const foreign = runInNewContext('new Float32Array([0.6, 0.8, 0, 0])') as Float32Array;
      expect(foreign instanceof Float32Array).toBe(false);
      const embedder = {
        dimensions: 4,
        semantic: true,
        maxBatchSize: 8,
        embed: async (texts: readonly string[]) => texts.map(() => foreign),
      };
      const { engine } = await h.open({ embedder });
      const { id } = await engine.as('agent-a').remember({ content: 'x y z' });
      const record = await engine.as('agent-a').get(id);
      expect(record.embedding).toEqual(Float32Array.from([0.6, 0.8, 0, 0]));
    });

    it('fails with DIMENSION_MISMATCH when the embedder returns the wrong length', async () => {
      const wrong = {
        dimensions: 4,
        semantic: true,
        maxBatchSize: 8,
        embed: async (texts: readonly string[]) => texts.map(() => new Float32Array(3)),
      };
      const { engine, store } = await h.open({ embedder: wrong });
      await expect(engine.as('agent-a').remember({ content: 'x y z' })).rejects.toMatchObject({
        code: 'DIMENSION_MISMATCH',
      });
      expect(await store.readAudit({ limit: 10 })).toEqual([]);
    });
  });

  describe('get and getMany', () => {
    it('getMany returns the visible records in the order asked, each once, skipping the rest', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const one = await a.remember({ content: 'one' });
      const two = await a.remember({ content: 'two', scope: 'public' });
      const hidden = await engine.as('agent-b').remember({ content: 'hidden' });
      const records = await a.getMany([two.id, 'missing', hidden.id, one.id, two.id]);
      expect(records.map((record) => record.content)).toEqual(['two', 'one']);
      expect(await engine.as('agent-b').getMany([two.id, one.id])).toEqual([await a.get(two.id)]);
      expect(await a.getMany([])).toEqual([]);
      await expect(a.getMany(['ok', ''])).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'ids[1]' },
      });
    });
  });

  describe('dedup', () => {
    it('returns the live record with the same normalized content, owner and scope', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const first = await a.remember({ content: 'Buy  milk' });
      const second = await a.remember({ content: '  buy MILK ' });
      expect(second).toEqual({ id: first.id, contentHash: first.contentHash, deduplicated: true });
      expect((await store.readAudit({ limit: 10 })).map((e) => e.op)).toEqual(['remember']);
    });

    it('stores separately for another scope, another owner, or after the first is forgotten', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const first = await a.remember({ content: 'buy milk' });
      const otherScope = await a.remember({ content: 'buy milk', scope: 'public' });
      const otherOwner = await engine.as('agent-b').remember({ content: 'buy milk' });
      await a.forget({ ids: [first.id] });
      const again = await a.remember({ content: 'buy milk' });
      expect([otherScope.deduplicated, otherOwner.deduplicated, again.deduplicated]).toEqual([
        false,
        false,
        false,
      ]);
      expect(new Set([first.id, otherScope.id, otherOwner.id, again.id]).size).toBe(4);
    });
  });
}
