import { createEngine } from '../../engine/create-engine.js';
import { planAccess } from '../../engine/plan-access.js';
import { contentHash as hashRecord } from '../../hashing.js';
import { type MemoryRecord, REDACTED_CONTENT } from '../../records.js';
import { createHashEmbedder } from '../hash-embedder.js';
import { createManualClock } from '../manual-clock.js';
import { createSequentialIds } from '../sequential-ids.js';
import type { Harness, TestApi } from './harness.js';

export function forgetSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('forget', () => {
    for (const mode of ['soft', 'hard', 'redact'] as const) {
      it(`${mode}: the record never comes back, and the forget is audited`, async () => {
        const { engine, store } = await h.open();
        const a = engine.as('agent-a');
        const { id, contentHash } = await a.remember({
          content: 'my bank pin is 1234',
          tags: ['secret'],
        });
        const keep = await a.remember({ content: 'my bank is Example Bank', tags: ['secret'] });
        expect(await a.forget({ ids: [id], mode })).toEqual({ mode, forgotten: [id] });
        await expect(a.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
        expect(
          (await a.recall({ query: 'bank pin', limit: 100 })).hits.map((hit) => hit.record.id),
        ).toEqual([keep.id]);
        const listed = await store.list({
          visibility: { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') },
          filters: {},
          includePlans: true,
        });
        expect(listed.map((v) => v.record.id)).toEqual([keep.id]);
        const events = await store.readAudit({ limit: 10 });
        const forgetEvent = events.find((e) => e.op === 'forget');
        // A redaction also records the hash of what it left, which the record's own no longer covers.
        const row = (await store.scanRecords({ limit: 10 })).find((record) => record.id === id);
        expect([forgetEvent?.recordIds, forgetEvent?.details]).toEqual([
          [id],
          mode === 'redact'
            ? {
                mode,
                contentHashes: [contentHash],
                redactedHashes: [hashRecord(row as MemoryRecord)],
              }
            : { mode, contentHashes: [contentHash] },
        ]);
        expect((await engine.verifyAudit()).ok).toBe(true);
      });

      if (mode !== 'hard') {
        it(`${mode}: the record stays, deleted and updated at the forget's time`, async () => {
          const { engine, store, clock } = await h.open();
          const a = engine.as('agent-a');
          const { id } = await a.remember({ content: 'a dated note' });
          const created = clock.now();
          clock.advance(60_000);
          const forgotten = clock.now();
          await a.forget({ ids: [id], mode });
          const [record] = await store.scanRecords({ limit: 10 });
          expect([
            record?.id,
            record?.content,
            record?.createdAt,
            record?.updatedAt,
            record?.deletedAt,
          ]).toEqual([
            id,
            mode === 'soft' ? 'a dated note' : REDACTED_CONTENT,
            created,
            forgotten,
            forgotten,
          ]);
        });
      }

      it(`${mode}: a forget by another process whose clock runs behind the writer's still verifies`, async () => {
        const { engine, store, clock } = await h.open();
        // A second engine on the same store, as another host would be, its clock 200 ms behind:
        // its forget's event is stamped before the remember it follows.
        const behind = createManualClock(new Date(clock.now().getTime() - 200));
        const other = createEngine({ store, clock: behind, ids: createSequentialIds('other-') });
        const owner = engine.as('agent-a');
        const { id } = await owner.remember({ content: 'the shared plan', scope: 'shared' });
        await owner.share({ recordId: id, with: ['agent-b'], permission: 'delete' });
        expect(await other.as('agent-b').forget({ ids: [id], mode })).toEqual({
          mode,
          forgotten: [id],
        });
        expect(await engine.verifyRecords()).toEqual({
          ok: true,
          records: mode === 'hard' ? 0 : 1,
          problems: [],
        });
        expect((await engine.verifyAudit()).ok).toBe(true);
      });
    }

    it('redact leaves the content in no search result and no audit event', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const { id } = await a.remember({
        content: 'the launch code is swordfish',
        metadata: { code: 'swordfish' },
      });
      await a.forget({ ids: [id], mode: 'redact' });
      expect(REDACTED_CONTENT).toBe('[redacted]');
      expect((await a.recall({ query: 'launch code' })).hits).toEqual([]);
      const events = JSON.stringify(await store.readAudit({ limit: 10 }));
      expect(events.includes('swordfish')).toBe(false);
    });

    it('is all-or-nothing: one invisible or undeletable id fails the call and forgets nothing', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const mine = await a.remember({ content: 'mine' });
      const theirsPublic = await b.remember({ content: 'theirs public', scope: 'public' });
      const theirsPrivate = await b.remember({ content: 'theirs private' });
      await expect(a.forget({ ids: [mine.id, theirsPrivate.id] })).rejects.toMatchObject({
        code: 'NOT_FOUND',
        details: { id: theirsPrivate.id },
      });
      await expect(a.forget({ ids: [mine.id, theirsPublic.id] })).rejects.toMatchObject({
        code: 'PERMISSION_DENIED',
        details: { id: theirsPublic.id },
      });
      expect((await a.get(mine.id)).id).toBe(mine.id);
      expect((await a.get(theirsPublic.id)).id).toBe(theirsPublic.id);
    });

    it('by filters forgets exactly the matching records the caller may delete', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const t1 = await a.remember({ content: 'one', tags: ['tmp'] });
      await a.remember({ content: 'two', tags: ['keep'] });
      const t3 = await a.remember({ content: 'three', tags: ['tmp', 'x'], scope: 'public' });
      await b.remember({ content: 'four', tags: ['tmp'], scope: 'public' });
      expect(await a.forget({ filters: { tagsAny: ['tmp'] } })).toEqual({
        mode: 'soft',
        forgotten: [t1.id, t3.id].sort(),
      });
      expect(await a.forget({ filters: { tagsAny: ['tmp'] } })).toEqual({
        mode: 'soft',
        forgotten: [],
      });
      expect((await b.recall({ query: 'four' })).hits).toHaveLength(1);
    });

    it('treats TTL expiry as forgotten', async () => {
      const { engine, clock } = await h.open();
      const a = engine.as('agent-a');
      const { id } = await a.remember({
        content: 'short lived',
        expiresAt: new Date(clock.now().getTime() + 60_000),
      });
      expect((await a.get(id)).id).toBe(id);
      clock.advance(60_000);
      await expect(a.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await a.recall({ query: 'short lived' })).hits).toEqual([]);
      expect((await a.remember({ content: 'short lived' })).deduplicated).toBe(false);
    });

    it('purges expired records for good, audited in each owner chain, and nothing else', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const b = engine.as('agent-b', { orgId: 'acme' });
      const soon = () => new Date(clock.now().getTime() + 60_000);
      const kept = await a.remember({ content: 'kept for ever' });
      const expiring = await a.remember({ content: 'expiring note', expiresAt: soon() });
      const later = await a.remember({
        content: 'expiring much later',
        expiresAt: new Date(clock.now().getTime() + 3_600_000),
      });
      const forgotten = await a.remember({ content: 'forgotten, then expired', expiresAt: soon() });
      await a.forget({ ids: [forgotten.id] });
      const theirs = await b.remember({ content: 'their expiring note', expiresAt: soon() });
      const plan = await planAccess(b).writePlan({
        query: 'an expiring plan',
        payload: { signature_tokens: ['expiring', 'plan'] },
        tokens: ['expiring', 'plan'],
        ttlMs: 60_000,
      });
      clock.advance(60_000);
      // Only the expired ones, page by page (pages of 2 here), whatever their owner or state.
      await expect(engine.purgeExpired({ pageSize: 0 })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      expect(await engine.purgeExpired({ pageSize: 2 })).toEqual({ purged: 4 });
      expect((await store.scanRecords({ limit: 100 })).map((record) => record.id).sort()).toEqual(
        [kept.id, later.id].sort(),
      );
      const forgets = (await store.readAudit({ limit: 100 })).filter(
        (event) => event.op === 'forget' && event.details.expired === true,
      );
      expect(
        forgets.map((event) => [event.chain, [...event.recordIds].sort(), event.details.mode]),
      ).toEqual([
        ['acme/agent-b', [theirs.id, plan.id].sort(), 'hard'],
        ['agent-a', [expiring.id], 'hard'],
        ['agent-a', [forgotten.id], 'hard'],
      ]);
      expect((await engine.verifyAudit()).ok).toBe(true);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 2, problems: [] });
      expect(await engine.purgeExpired()).toEqual({ purged: 0 });
    });

    it('purges a record expiring exactly now, once only when two purges overlap', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const exact = await a.remember({
        content: 'expires exactly now',
        expiresAt: new Date(clock.now().getTime() + 1_000),
      });
      const also = await a.remember({
        content: 'also expires exactly now',
        expiresAt: new Date(clock.now().getTime() + 1_000),
      });
      const live = await a.remember({
        content: 'one millisecond left',
        expiresAt: new Date(clock.now().getTime() + 1_001),
      });
      clock.advance(1_000);
      // Another purge runs to its end between this purge's read of the page and its transaction.
      let other: unknown;
      const racing = Object.create(store) as typeof store;
      racing.scanRecords = async (options) => {
        const page = await store.scanRecords(options);
        other ??= await engine.purgeExpired();
        return page;
      };
      const purging = createEngine({ store: racing, clock, ids: createSequentialIds('p-') });
      // The records the other purge removed are not counted, nor audited, twice.
      expect(await purging.purgeExpired()).toEqual({ purged: 0 });
      expect(other).toEqual({ purged: 2 });
      expect((await store.scanRecords({ limit: 10 })).map((record) => record.id)).toEqual([
        live.id,
      ]);
      const forgets = (await store.readAudit({ limit: 100 })).filter(
        (event) => event.op === 'forget',
      );
      expect(forgets.map((event) => [event.recordIds, event.details])).toEqual([
        [
          [exact.id, also.id],
          { mode: 'hard', expired: true, contentHashes: [exact.contentHash, also.contentHash] },
        ],
      ]);
      expect((await engine.verifyAudit()).ok).toBe(true);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
    });

    it('by filters leaves plans alone, even procedural filters', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const plan = await planAccess(a).writePlan({
        query: 'zebra plan',
        payload: {},
        tokens: ['zebra'],
      });
      const record = await a.remember({ content: 'a procedure', memoryType: 'procedural' });
      expect(await a.forget({ filters: { memoryTypes: ['procedural'] } })).toEqual({
        mode: 'soft',
        forgotten: [record.id],
      });
      const candidates = await planAccess(a).findCandidates({
        tokens: ['zebra'],
        minTokens: 1,
        maxTokens: 5,
      });
      expect(candidates.map((candidate) => candidate.record.id)).toEqual([plan.id]);
    });

    it("drops a hard-forgotten record's grants and a forgotten plan's stats", async () => {
      const { engine, store } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const { id } = await a.remember({ content: 'shared thing', scope: 'shared' });
      await a.share({ recordId: id, with: ['agent-b'] });
      expect((await store.listGrants([id])).length).toBe(1);
      await a.forget({ ids: [id], mode: 'hard' });
      const plan = await planAccess(a).writePlan({
        query: 'zebra plan',
        payload: {},
        tokens: ['zebra'],
      });
      await planAccess(a).updatePlanStats(plan.id, () => ({
        runningOutcome: 1,
        replays: 1,
        failures: 0,
        details: {},
      }));
      expect((await store.listPlanStats([plan.id])).length).toBe(1);
      await a.forget({ ids: [plan.id] });
      expect({
        grants: await store.listGrants([id]),
        stats: await store.listPlanStats([plan.id]),
      }).toEqual({ grants: [], stats: [] });
    });

    it('redact empties the metadata and drops the embedding', async () => {
      const { engine, store } = await h.open({ embedder: createHashEmbedder({ dimensions: 16 }) });
      const a = engine.as('agent-a');
      const { id } = await a.remember({
        content: 'launch code swordfish',
        metadata: { code: 'swordfish' },
      });
      expect((await store.scanRecords({ limit: 10 }))[0]?.embedding).not.toBeNull();
      await a.forget({ ids: [id], mode: 'redact' });
      const [record] = await store.scanRecords({ limit: 10 });
      expect([record?.id, record?.content, record?.metadata, record?.embedding]).toEqual([
        id,
        REDACTED_CONTENT,
        {},
        null,
      ]);
    });
  });
}
