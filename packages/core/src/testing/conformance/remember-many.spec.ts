import { createEngine } from '../../engine/create-engine.js';
import { MnemoError } from '../../errors.js';
import type { Embedder } from '../../ports/embedder.js';
import type { MemoryStore, StoreTx } from '../../ports/memory-store.js';
import { createHashEmbedder } from '../hash-embedder.js';
import type { Harness, TestApi } from './harness.js';

export function rememberManySpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('rememberMany', () => {
    it('writes every record and one chained audit event each, in input order, across chunks', async () => {
      const embedder = createHashEmbedder({ dimensions: 16 });
      const { engine, store } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const existing = await a.remember({ content: 'already here' });
      const inputs = Array.from({ length: 1203 }, (_, i) => ({
        content: `bulk note ${i}`,
        tags: [`t${i % 3}`],
      }));
      inputs[600] = { content: 'ALREADY here', tags: [] };
      inputs[1202] = { content: 'Bulk note 7', tags: [] };
      const results = await a.rememberMany(inputs);
      expect(results).toHaveLength(1203);
      expect(results[600]).toEqual({ ...existing, deduplicated: true });
      expect(results[1202]).toEqual({ ...results[7], deduplicated: true });
      expect(results.filter((r) => r.deduplicated)).toHaveLength(2);
      const ids = results.filter((r) => !r.deduplicated).map((r) => r.id);
      expect(ids).toEqual([...ids].sort());
      const listed = await store.list({
        visibility: { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') },
        filters: {},
      });
      expect(listed).toHaveLength(1 + 1201);
      expect((await a.get(results[5]?.id as string)).tags).toEqual(['t2']);
      // Each record holds its own vector, exactly, on either side of a chunk boundary.
      for (const i of [0, 499, 500, 1201]) {
        const [vector] = await embedder.embed([`bulk note ${i}`]);
        expect((await a.get(results[i]?.id as string)).embedding).toEqual(vector);
      }
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events, verification.heads[0]?.seq]).toEqual([
        true,
        1202,
        1202,
      ]);
      const events = await store.readAudit({ limit: 5 });
      expect(events.map((e) => e.recordIds)).toEqual([
        [existing.id],
        ...ids.slice(0, 4).map((id) => [id]),
      ]);
    });

    it('fails with the first failing chunk: the chunks before it stay committed, later ones are never embedded', async () => {
      const hash = createHashEmbedder({ dimensions: 8 });
      const embedded: string[] = [];
      const embedder: Embedder = {
        ...hash,
        async embed(texts) {
          embedded.push(...texts);
          if (texts.includes('bulk note 700')) throw new Error('model unavailable');
          return hash.embed(texts);
        },
      };
      const { engine, store } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const inputs = bulkNotes();
      await expect(a.rememberMany(inputs)).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
      const listed = await store.list({
        visibility: { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') },
        filters: {},
      });
      expect(listed.map((v) => v.record.content).sort()).toEqual(
        inputs
          .slice(0, 500)
          .map((input) => input.content)
          .sort(),
      );
      expect(embedded.includes('bulk note 1000')).toBe(false);
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events]).toEqual([true, 500]);
    });

    it('embeds each chunk while the chunk before it is written, and writes the chunks one after another', async () => {
      const steps: string[] = [];
      const firsts = new Set(['bulk note 0', 'bulk note 500', 'bulk note 1000']);
      const embedder = recordingEmbedder(createHashEmbedder({ dimensions: 8 }), (first) => {
        if (firsts.has(first)) steps.push(`embed ${first}`);
      });
      const { store, clock } = await h.open({ embedder });
      const traced = wrapTransactions(store, async (tx, fn) => {
        steps.push('write');
        const result = await fn(tx);
        steps.push('written');
        return result;
      });
      const engine = createEngine({ store: traced, clock, embedder });
      const inputs = bulkNotes();
      const results = await engine.as('agent-a').rememberMany(inputs);
      expect(results.filter((r) => !r.deduplicated)).toHaveLength(1203);
      expect(steps).toEqual([
        'embed bulk note 0',
        'embed bulk note 500',
        'write',
        'written',
        'embed bulk note 1000',
        'write',
        'written',
        'write',
        'written',
      ]);
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events]).toEqual([true, 1203]);
    });

    it('lets the event loop turn between embedding batches, so a chunk goes to the store while the next is embedded', async () => {
      // The hash embedder answers in microtasks, as a CPU-bound local model would: without a
      // turn of the event loop between batches, nothing else runs until the whole chunk is done.
      const steps: string[] = [];
      const embedder = recordingEmbedder(
        createHashEmbedder({ dimensions: 8, maxBatchSize: 100 }),
        (first) => steps.push(`embed ${first}`),
      );
      const { store, clock } = await h.open({ embedder });
      const traced = wrapTransactions(
        store,
        (tx, fn) => fn(tx),
        () => steps.push('transaction'),
      );
      const engine = createEngine({ store: traced, clock, embedder });
      const inputs = bulkNotes();
      const results = await engine.as('agent-a').rememberMany(inputs);
      expect(results.filter((r) => !r.deduplicated)).toHaveLength(1203);
      expect(steps).toEqual([
        'embed bulk note 0',
        'embed bulk note 100',
        'embed bulk note 200',
        'embed bulk note 300',
        'embed bulk note 400',
        'embed bulk note 500',
        'transaction',
        'embed bulk note 600',
        'embed bulk note 700',
        'embed bulk note 800',
        'embed bulk note 900',
        'embed bulk note 1000',
        'transaction',
        'embed bulk note 1100',
        'embed bulk note 1200',
        'transaction',
      ]);
    });

    it('stops at a chunk that fails in the store: its rows roll back, earlier chunks stay, no later chunk is written', async () => {
      const { engine, store, clock } = await h.open({
        embedder: createHashEmbedder({ dimensions: 8 }),
      });
      await engine.as('agent-a').remember({ content: 'written before' });
      // The store as-is, except that the second chunk's transaction fails after writing its
      // records (in the store's own transaction, which must roll them back).
      let inserts = 0;
      const failingTx = (tx: StoreTx): StoreTx => ({
        ...tx,
        insertRecords: async (records) => {
          inserts += 1;
          const written = await tx.insertRecords(records);
          if (inserts === 2) throw new MnemoError('STORE_UNAVAILABLE', 'injected fault');
          return written;
        },
      });
      const faulty = wrapTransactions(store, (tx, fn) => fn(failingTx(tx)));
      const other = createEngine({
        store: faulty,
        clock,
        embedder: createHashEmbedder({ dimensions: 8 }),
      });
      const inputs = bulkNotes();
      await expect(other.as('agent-a').rememberMany(inputs)).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        message: 'injected fault',
      });
      expect(inserts).toBe(2);
      const listed = await store.list({
        visibility: { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') },
        filters: {},
      });
      expect(listed.map((v) => v.record.content).sort()).toEqual(
        ['written before', ...inputs.slice(0, 500).map((input) => input.content)].sort(),
      );
      const verification = await engine.verifyAudit();
      expect([verification.ok, verification.events]).toEqual([true, 501]);
      // The rolled-back chunk left no trace a later write trips over.
      await expect(
        engine.as('agent-a').rememberMany([{ content: 'bulk note 700' }]),
      ).resolves.toMatchObject([{ deduplicated: false }]);
    });

    it('writes nothing of a chunk the store rejects (DIMENSION_MISMATCH)', async () => {
      const { engine, store, clock } = await h.open({
        embedder: createHashEmbedder({ dimensions: 8 }),
      });
      await engine.as('agent-a').remember({ content: 'eight dimensions' });
      const before = await store.readAudit({ limit: 10 });
      // A 16-dimensional engine on the same store: its first chunk fails inside the transaction.
      const other = createEngine({
        store,
        clock,
        embedder: createHashEmbedder({ dimensions: 16 }),
      });
      const inputs = bulkNotes();
      await expect(other.as('agent-a').rememberMany(inputs)).rejects.toMatchObject({
        code: 'DIMENSION_MISMATCH',
      });
      expect(await store.readAudit({ limit: 10 })).toEqual(before);
      const listed = await store.list({
        visibility: { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') },
        filters: {},
      });
      expect(listed.map((v) => v.record.content)).toEqual(['eight dimensions']);
    });

    it('validates every input first: one bad input fails the call, names its index, writes nothing', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const inputs = Array.from({ length: 10 }, (_, i) => ({ content: `note ${i}` }));
      inputs[7] = { content: '  ' };
      await expect(a.rememberMany(inputs)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'inputs[7].content' },
      });
      await expect(a.rememberMany('nope' as never)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      expect(await store.readAudit({ limit: 10 })).toEqual([]);
      expect(await a.rememberMany([])).toEqual([]);
    });
  });
}

/** `bulk note 0` … `bulk note 1202`: two full chunks of 500 and a part of one. */
function bulkNotes(): { content: string }[] {
  return Array.from({ length: 1203 }, (_, i) => ({ content: `bulk note ${i}` }));
}

/** `embedder` as-is, except that `embedded` gets the first text of each call. */
function recordingEmbedder(embedder: Embedder, embedded: (first: string) => void): Embedder {
  return {
    ...embedder,
    async embed(texts) {
      embedded(texts[0] as string);
      return embedder.embed(texts);
    },
  };
}

/** `store` as-is, except that `called` runs when a transaction is asked for and the caller's work runs through `wrap`. */
function wrapTransactions(
  store: MemoryStore,
  wrap: <T>(tx: StoreTx, fn: (tx: StoreTx) => Promise<T>) => Promise<T>,
  called: () => void = () => undefined,
): MemoryStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'transaction') {
        return <T>(fn: (tx: StoreTx) => Promise<T>) => {
          called();
          return target.transaction((tx) => wrap(tx, fn));
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as MemoryStore;
}
