import { isDeepStrictEqual } from 'node:util';
import { chainEvent } from '../../audit/audit-event.js';
import { createEngine } from '../../engine/create-engine.js';
import { MnemoError } from '../../errors.js';
import type { Embedder } from '../../ports/embedder.js';
import type { NewRecord } from '../../ports/memory-store.js';
import type { MemoryRecord } from '../../records.js';
import { createHashEmbedder } from '../hash-embedder.js';
import { memoryRecord } from '../memory-record.js';
import { createSequentialIds } from '../sequential-ids.js';
import {
  type ConformanceOptions,
  codeOf,
  type Harness,
  replacing,
  type TestApi,
} from './harness.js';

export function lifecycleSpec(t: TestApi, h: Harness, options: ConformanceOptions): void {
  const { describe, it, expect } = t;
  describe('lifecycle', () => {
    it('init is idempotent, close is idempotent, use after close is STORE_UNAVAILABLE', async () => {
      const { engine, store } = await h.open();
      await store.init();
      await engine.as('agent-a').remember({ content: 'before close' });
      await store.close();
      await store.close();
      await expect(engine.as('agent-a').remember({ content: 'after close' })).rejects.toMatchObject(
        { code: 'STORE_UNAVAILABLE' },
      );
      await expect(engine.as('agent-a').recall({ query: 'close' })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
      await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    });

    it('engine.close lets the calls made before it finish, then closes the store; later calls are STORE_UNAVAILABLE', async () => {
      // Holds every embedding until released, so that calls are still under way when close is called.
      const hash = createHashEmbedder({ dimensions: 16 });
      let held: Promise<void> | null = null;
      const { held: closing, release } = gate();
      const embedder: Embedder = {
        dimensions: hash.dimensions,
        semantic: true,
        maxBatchSize: hash.maxBatchSize,
        embed: async (texts) => {
          await held;
          return hash.embed(texts);
        },
      };
      const { engine, store } = await h.open({ embedder });
      const a = engine.as('agent-a');
      const seed = await a.remember({ content: 'the seed written before closing' });
      held = closing;

      const made = Promise.allSettled([
        a.remember({ content: 'remembered while closing' }),
        a.rememberMany([{ content: 'first of many' }, { content: 'second of many' }]),
        a.recall({ query: 'seed written', strategy: 'semantic', limit: 1 }),
        a.get(seed.id),
        engine.verifyAudit(),
      ]);
      const steps: string[] = [];
      const closed = engine.close().then(() => steps.push('closed'));
      const late = Promise.allSettled([
        a.remember({ content: 'too late' }),
        a.get(seed.id),
        engine.as('agent-b').recall({ query: 'seed' }),
        engine.with({ readAuditing: false }).verifyAudit(),
        engine.purgeExpired(),
        engine.exportRecords().next(),
      ]);
      await afterTurns(20);
      steps.push('released');
      release();

      const refused = new MnemoError('STORE_UNAVAILABLE', 'the engine is closed');
      expect(await late).toEqual(Array(6).fill({ status: 'rejected', reason: refused }));
      const [one, many, recalled, got, verified] = await made;
      expect(one).toEqual({
        status: 'fulfilled',
        value: { id: 'id-000003', contentHash: expect.any(String), deduplicated: false },
      });
      expect(many).toEqual({
        status: 'fulfilled',
        value: [
          { id: 'id-000004', contentHash: expect.any(String), deduplicated: false },
          { id: 'id-000005', contentHash: expect.any(String), deduplicated: false },
        ],
      });
      expect(
        recalled.status === 'fulfilled' && recalled.value.hits.map((hit) => hit.record.id),
      ).toEqual([seed.id]);
      expect(got.status === 'fulfilled' && got.value.content).toBe(
        'the seed written before closing',
      );
      expect(verified).toMatchObject({ status: 'fulfilled', value: { ok: true, problems: [] } });
      await closed;
      expect(steps).toEqual(['released', 'closed']);
      await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await engine.close();
    });

    it('a hybrid recall whose lexical search fails settles once its semantic search has, so engine.close waits for it', async () => {
      const { store, clock } = await h.open();
      const steps: string[] = [];
      const { held, release } = gate();
      const watched = replacing(store, {
        searchLexical: async () => {
          throw new MnemoError('STORE_UNAVAILABLE', 'lexical search lost');
        },
        searchVector: async (query) => {
          await held;
          const hits = await store.searchVector(query);
          steps.push(`vector search found ${hits.length}`);
          return hits;
        },
      });
      const engine = createEngine({
        store: watched,
        clock,
        ids: createSequentialIds(),
        embedder: createHashEmbedder({ dimensions: 16 }),
      });
      await engine.as('agent-a').remember({ content: 'a hybrid note' });
      const recalled = codeOf(
        engine.as('agent-a').recall({ query: 'hybrid note', strategy: 'hybrid' }),
      ).then((code) => steps.push(`recall ${code}`));
      const closed = engine.close().then(() => steps.push('closed'));
      await afterTurns(20);
      steps.push('released');
      release();
      await Promise.all([recalled, closed]);
      expect(steps).toEqual([
        'released',
        'vector search found 1',
        'recall STORE_UNAVAILABLE',
        'closed',
      ]);
    });

    it('rememberMany whose chunk fails to write settles once the next chunk is embedded, so engine.close waits for it', async () => {
      const { store, clock } = await h.open();
      const hash = createHashEmbedder({ dimensions: 16 });
      const steps: string[] = [];
      const { held, release } = gate();
      // Chunks of 500: the second is embedded while the first is written.
      const embedder: Embedder = {
        dimensions: hash.dimensions,
        semantic: true,
        maxBatchSize: 1_000,
        embed: async (texts) => {
          if (texts[0] === 'note 500') {
            await held;
            steps.push('next chunk embedded');
          }
          return hash.embed(texts);
        },
      };
      const failing = replacing(store, {
        transaction: async () => {
          throw new MnemoError('STORE_UNAVAILABLE', 'write lost');
        },
      });
      const engine = createEngine({ store: failing, clock, ids: createSequentialIds(), embedder });
      const written = codeOf(
        engine
          .as('agent-a')
          .rememberMany(Array.from({ length: 1_000 }, (_, i) => ({ content: `note ${i}` }))),
      ).then((code) => steps.push(`rememberMany ${code}`));
      const closed = engine.close().then(() => steps.push('closed'));
      await afterTurns(20);
      steps.push('released');
      release();
      await Promise.all([written, closed]);
      expect(steps).toEqual([
        'released',
        'next chunk embedded',
        'rememberMany STORE_UNAVAILABLE',
        'closed',
      ]);
    });

    it('store.close lets the reads running finish, refuses the rest with STORE_UNAVAILABLE, and closes', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      await a.rememberMany(
        Array.from({ length: 200 }, (_, i) => ({ content: `note ${i} about closing a store` })),
      );
      const visibility = { agentId: 'agent-a', orgId: null, now: clock.now() };
      const reads: Record<string, () => Promise<unknown>> = {
        scan: () => store.scanRecords({ limit: 200 }),
        list: () => store.list({ visibility, filters: {} }),
        get: () => store.get(visibility, ['id-000001', 'id-000200']),
        lexical: () =>
          store.searchLexical({ visibility, filters: {}, terms: ['close', 'store'], limit: 10 }),
        audit: () => store.readAudit({ limit: 10 }),
        heads: () => store.auditHeads(),
      };
      const answers = new Map<string, unknown>();
      for (const [name, read] of Object.entries(reads)) answers.set(name, await read());
      // Many reads of each kind, so that some are running on the database when close is called.
      const running = Object.entries(reads).flatMap(([name, read]) =>
        Array.from({ length: 10 }, () =>
          read().then(
            (answer) =>
              isDeepStrictEqual(answer, answers.get(name)) ? 'answer' : `${name} differs`,
            (error: unknown) => (error as { code?: string }).code ?? String(error),
          ),
        ),
      );
      await new Promise((done) => setImmediate(done));
      await store.close();
      const outcomes = new Set(await Promise.all(running));
      expect([...outcomes].filter((o) => o !== 'answer' && o !== 'STORE_UNAVAILABLE')).toEqual([]);
      await expect(store.scanRecords({ limit: 1 })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    });

    it('a store used before init is STORE_UNAVAILABLE', async () => {
      const store = await options.createStore();
      try {
        await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        await expect(store.transaction(async () => 1)).rejects.toMatchObject({
          code: 'STORE_UNAVAILABLE',
        });
      } finally {
        await store.close();
        await options.destroyStore?.(store);
      }
    });

    it('rolls a transaction back when its callback throws', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      await a.remember({ content: 'kept' });
      const before = await store.readAudit({ limit: 10 });
      await expect(
        store.transaction(async (tx) => {
          await tx.touch(['id-000001'], new Date('2026-06-01'));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await store.readAudit({ limit: 10 })).toEqual(before);
      expect((await a.get('id-000001')).accessCount).toBe(0);
    });

    it('rolls back an audit append too: the next event chains onto the head before it', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      await a.remember({ content: 'first' });
      await expect(
        store.transaction(async (tx) => {
          const event = chainEvent(await tx.auditHead('agent-a'), {
            id: 'phantom',
            chain: 'agent-a',
            at: clock.now(),
            principal: 'agent-a',
            op: 'remember',
            recordIds: [],
            details: {},
          });
          await tx.appendAudit([event]);
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      await a.remember({ content: 'second' });
      expect([
        (await engine.verifyAudit()).ok,
        (await store.readAudit({ limit: 10 })).map((event) => event.seq),
      ]).toEqual([true, [1, 2]]);
    });

    it('reads a new chain as headless until an event is appended, whatever transactions read it before', async () => {
      const { engine, store, clock } = await h.open();
      // Committed and rolled back, a transaction that only reads a new chain's head leaves none.
      expect(await store.transaction((tx) => tx.auditHead('agent-a'))).toBeNull();
      await expect(
        store.transaction(async (tx) => {
          await tx.auditHead('agent-a');
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await store.transaction((tx) => tx.auditHead('agent-a'))).toBeNull();
      expect(await store.auditHeads()).toEqual([]);
      await engine.as('agent-a').remember({ content: 'first' });
      const [event] = await store.readAudit({ limit: 10 });
      expect(await store.auditHeads()).toEqual([
        { chain: 'agent-a', seq: 1, hash: event?.hash as string },
      ]);
      expect(await store.transaction((tx) => tx.auditHead('agent-a'))).toEqual({
        chain: 'agent-a',
        seq: 1,
        hash: event?.hash,
      });
      expect([(await engine.verifyAudit()).ok, event?.at]).toEqual([true, clock.now()]);
    });

    it("finds live duplicates among the transaction's own inserts, and not deleted or expired ones", async () => {
      const { engine, store, clock } = await h.open();
      // A remember first, so that a store that loads what it knows of its records on the
      // first write has done so before the transaction below.
      await engine.as('agent-a').remember({ content: 'first' });
      const now = clock.now();
      const inserted = (id: string, fields: Partial<MemoryRecord> = {}): NewRecord => ({
        record: memoryRecord({ id, content: id, createdAt: now, updatedAt: now, ...fields }),
        dedupKey: `key-${id}`,
        isPlan: false,
        terms: [],
        docLength: 0,
        planTokens: null,
      });
      const rows = [
        inserted('live'),
        inserted('deleted', { deletedAt: now }),
        inserted('expired', { expiresAt: now }),
      ];
      const keys = ['key-live', 'key-deleted', 'key-expired', 'key-none'];
      const found = await store.transaction(async (tx) => {
        await tx.insertRecords(rows);
        return tx.findLiveDuplicates(keys, now);
      });
      const live = { id: 'live', contentHash: rows[0]?.record.contentHash };
      expect([...found]).toEqual([['key-live', live]]);
      const after = await store.transaction((tx) => tx.findLiveDuplicates(keys, now));
      expect([...after]).toEqual([['key-live', live]]);
      // Several live records of one key (an import keeps duplicates as they were): the one of
      // the smallest id, in one call or several keys at once.
      const twins = [inserted('twin-b'), inserted('twin-a')].map((row) => ({
        ...row,
        dedupKey: 'key-twin',
      }));
      await store.transaction((tx) => tx.insertRecords(twins));
      const twin = { id: 'twin-a', contentHash: twins[1]?.record.contentHash };
      for (const wanted of [['key-twin'], ['key-twin', 'key-live']]) {
        const map = await store.transaction((tx) => tx.findLiveDuplicates(wanted, now));
        expect(map.get('key-twin')).toEqual(twin);
      }
    });
  });
}

/** A promise that stays pending until `release()` is called. */
function gate(): { held: Promise<void>; release: () => void } {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { held, release };
}

/** Lets the calls under way run for `turns` turns of the event loop. */
async function afterTurns(turns: number): Promise<void> {
  for (let turn = 0; turn < turns; turn += 1) await new Promise((done) => setImmediate(done));
}
