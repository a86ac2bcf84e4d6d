import type { Engine } from '../../engine/create-engine.js';
import { planAccess } from '../../engine/plan-access.js';
import { type ExportedRecord, exportFromJson, exportToJson } from '../../engine/transfer.js';
import { contentHash } from '../../hashing.js';
import { type MemoryRecord, PLAN_TAG, REDACTED_CONTENT } from '../../records.js';
import { createHashEmbedder } from '../hash-embedder.js';
import { memoryRecord } from '../memory-record.js';
import type { Harness, TestApi } from './harness.js';

export function transferSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('export and import', () => {
    it('reproduces every record, field and grant in an empty store, with a verifying audit log', async () => {
      const embedder = createHashEmbedder({ dimensions: 8 });
      const source = await h.open({ embedder, experienceMemory: true });
      const a = source.engine.as('agent-a', { orgId: 'acme' });
      const kept = await a.remember({
        content: 'kept, shared, tagged',
        scope: 'shared',
        tags: ['x', 'y'],
        metadata: { n: 1.5, nested: { ok: true } },
        threadId: 't-1',
        sourceType: 'chat',
        importance: 0.75,
        expiresAt: new Date('2030-01-01T00:00:00.000Z'),
      });
      await a.share({
        recordId: kept.id,
        with: ['agent-b'],
        permission: 'delete',
        expiresAt: new Date('2029-01-01T00:00:00.000Z'),
      });
      const soft = await a.remember({ content: 'soft deleted' });
      const redacted = await a.remember({ content: 'secret to redact' });
      await a.forget({ ids: [soft.id] });
      await a.forget({ ids: [redacted.id], mode: 'redact' });
      await engineRecall(a);
      const plan = await planAccess(a).writePlan({
        query: 'how to x',
        payload: { signature_tokens: ['how'] },
        tokens: ['how'],
      });
      const stats = await planAccess(a).updatePlanStats(plan.id, () => ({
        runningOutcome: 0.25,
        replays: 2,
        failures: 1,
        details: {},
      }));
      await source.engine.as('agent-c').remember({ content: 'another owner', scope: 'global' });

      const exported = [];
      for await (const item of source.engine.exportRecords({ pageSize: 2 })) exported.push(item);
      expect(exported).toHaveLength(5);
      // A plan's reported outcomes go with it (a plan retired in the source stays retired).
      expect(exported.filter((item) => item.planStats !== undefined)).toEqual([
        expect.objectContaining({
          record: expect.objectContaining({ id: plan.id }),
          planStats: { ...stats, planId: plan.id },
        }),
      ]);
      expect(exported.map((item) => item.record.id)).toEqual(
        [...exported.map((item) => item.record.id)].sort(),
      );
      const lines = exported.map((item) => JSON.stringify(exportToJson(item)));
      const parsed = lines.map((line, i) => exportFromJson(JSON.parse(line), `line ${i + 1}`));
      expect(parsed).toEqual(exported);

      const target = await h.open({ embedder, experienceMemory: true });
      expect(await target.engine.importRecords(parsed)).toEqual({ imported: 5, skipped: 0 });
      const again = [];
      for await (const item of target.engine.exportRecords()) again.push(item);
      expect(again).toEqual(exported);
      expect(again.find((item) => item.record.id === kept.id)?.grants).toEqual([
        expect.objectContaining({
          granteeAgentId: 'agent-b',
          granteeOrgId: 'acme',
          permission: 'delete',
        }),
      ]);
      const verification = await target.engine.verifyAudit();
      expect([verification.ok, verification.events]).toEqual([true, 5]);
      expect((await target.engine.verifyRecords()).problems).toEqual([]);

      // The imported store works: search, plans, grants, dedup.
      const b = target.engine.as('agent-b', { orgId: 'acme' });
      expect(
        (await b.recall({ query: 'tagged', strategy: 'lexical' })).hits.map((hit) => hit.record.id),
      ).toEqual([kept.id]);
      const plans = await planAccess(target.engine.as('agent-a', { orgId: 'acme' })).findCandidates(
        { tokens: ['how'], minTokens: 1, maxTokens: 1 },
      );
      expect(plans.map((found) => [found.record.tags, found.stats])).toEqual([[[PLAN_TAG], stats]]);
      expect(
        (
          await target.engine
            .as('agent-a', { orgId: 'acme' })
            .remember({ content: 'Kept, shared,  tagged', scope: 'shared' })
        ).deduplicated,
      ).toBe(true);
      expect(await target.engine.importRecords(parsed)).toEqual({ imported: 0, skipped: 5 });
    });

    it("rejects plan stats that are not a plan's or not possible, writing nothing", async () => {
      const source = await h.open({ experienceMemory: true });
      const a = source.engine.as('agent-a');
      const plan = await planAccess(a).writePlan({
        query: 'how to x',
        payload: { signature_tokens: ['how'] },
        tokens: ['how'],
      });
      await planAccess(a).updatePlanStats(plan.id, () => ({
        runningOutcome: 0.75,
        replays: 1,
        failures: 0,
        details: {},
      }));
      const note = await a.remember({ content: 'not a plan' });
      const exported: ExportedRecord[] = [];
      for await (const item of source.engine.exportRecords()) exported.push(item);
      const [withStats, other] = [plan.id, note.id].map((id) =>
        exported.find((item) => item.record.id === id),
      ) as [ExportedRecord, ExportedRecord];
      const stats = withStats.planStats as NonNullable<ExportedRecord['planStats']>;
      const target = await h.open({ experienceMemory: true });
      const cases: [unknown, string][] = [
        [{ ...other, planStats: { ...stats, planId: note.id } }, 'records[0].planStats'],
        [{ ...withStats, planStats: { ...stats, planId: note.id } }, 'records[0].planStats.planId'],
        [
          { ...withStats, planStats: { ...stats, runningOutcome: 1.5 } },
          'records[0].planStats.runningOutcome',
        ],
        [{ ...withStats, planStats: { ...stats, failures: 2 } }, 'records[0].planStats.failures'],
        [{ ...withStats, planStats: { ...stats, replays: -1 } }, 'records[0].planStats.replays'],
        [{ ...withStats, planStats: { ...stats, extra: 1 } }, 'records[0].planStats.extra'],
      ];
      for (const [item, field] of cases) {
        await expect(target.engine.importRecords([item as ExportedRecord])).rejects.toMatchObject({
          code: 'INVALID_INPUT',
          details: { field },
        });
      }
      expect(await target.store.scanRecords({ limit: 10 })).toEqual([]);
      // The JSON form carries them too.
      const line = JSON.parse(JSON.stringify(exportToJson(withStats)));
      expect(line.planStats).toEqual({ ...stats, updatedAt: stats.updatedAt.toISOString() });
      expect(exportFromJson(line, 'line 1')).toEqual(withStats);
    });

    it('rejects a tampered record before writing anything', async () => {
      const source = await h.open();
      const { id } = await source.engine.as('agent-a').remember({ content: 'original' });
      const exported = [];
      for await (const item of source.engine.exportRecords()) exported.push(exportToJson(item));
      const json = JSON.parse(JSON.stringify(exported[0]));
      json.record.content = 'forged';
      expect(() => exportFromJson(json, 'line 1')).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
      json.record.content = 'original';
      json.record.scope = 'global';
      const target = await h.open();
      const forged = { ...exportFromJsonUnchecked(json), grants: [] };
      await expect(target.engine.importRecords([forged])).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      expect(await target.store.scanRecords({ limit: 10 })).toEqual([]);
      expect(id).toBe('id-000001');
      for (const bad of [
        {},
        { format: 'x' },
        { format: 'mnemo.record.v1', record: {}, grants: [] },
      ]) {
        expect(() => exportFromJson(bad, 'line 1')).toThrow(
          expect.objectContaining({ code: 'INVALID_INPUT' }),
        );
      }
    });

    it('validates every field of records handed to importRecords, and writes nothing on bad input', async () => {
      const source = await h.open();
      const a = source.engine.as('agent-a');
      const { id } = await a.remember({ content: 'a record to import', scope: 'shared' });
      await a.share({ recordId: id, with: ['agent-b'], permission: 'read' });
      const exported: ExportedRecord[] = [];
      for await (const item of source.engine.exportRecords()) exported.push(item);
      const [good] = exported as [ExportedRecord];
      // A field changed and the hash recomputed over it, as code building records by hand would.
      const withRecord = (change: Record<string, unknown>): unknown => {
        const record = { ...good.record, ...change } as MemoryRecord;
        const hashable =
          !('createdAt' in change) &&
          (!('embedding' in change) || change.embedding instanceof Float32Array);
        return {
          record: { ...record, contentHash: hashable ? contentHash(record) : record.contentHash },
          grants: [],
        };
      };
      const cases: [unknown, string][] = [
        [withRecord({ agentId: 'bad agent id!' }), 'records[0].record.agentId'],
        [withRecord({ content: '   ' }), 'records[0].record.content'],
        [withRecord({ memoryType: 'nonsense' }), 'records[0].record.memoryType'],
        [withRecord({ scope: 'everyone' }), 'records[0].record.scope'],
        [withRecord({ importance: 7 }), 'records[0].record.importance'],
        [withRecord({ accessCount: -5 }), 'records[0].record.accessCount'],
        [withRecord({ createdAt: 'yesterday' }), 'records[0].record.createdAt'],
        [withRecord({ embedding: [1, 2] }), 'records[0].record.embedding'],
        [withRecord({ colour: 'red' }), 'records[0].record.colour'],
        [
          { ...good, grants: [{ ...good.grants[0], permission: 'superuser' }] },
          'records[0].grants[0].permission',
        ],
        [
          { ...good, grants: [{ ...good.grants[0], recordId: 'another' }] },
          'records[0].grants[0].recordId',
        ],
        // Grants share could not have made: they would show the record to another org's agent,
        // or sit on a record nobody but its owner may see.
        [
          { ...good, grants: [{ ...good.grants[0], granteeOrgId: 'other-org' }] },
          'records[0].grants[0].granteeOrgId',
        ],
        [
          { ...good, grants: [{ ...good.grants[0], granteeAgentId: 'agent-a' }] },
          'records[0].grants[0].granteeAgentId',
        ],
        [
          { ...(withRecord({ scope: 'private' }) as object), grants: good.grants },
          'records[0].grants[0]',
        ],
        [{ record: { id: 'x' }, grants: [] }, 'records[0].record.agentId'],
        [null, 'records[0]'],
      ];
      const target = await h.open();
      for (const [item, field] of cases) {
        await expect(target.engine.importRecords([item as ExportedRecord])).rejects.toMatchObject({
          code: 'INVALID_INPUT',
          details: { field },
        });
      }
      await expect(
        target.engine.importRecords(null as unknown as ExportedRecord[]),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { field: 'records' } });

      // A bad record after a whole chunk of good ones: nothing at all is written.
      const many = Array.from({ length: 501 }, (_, i) =>
        withRecord({ id: `imported-${String(i).padStart(4, '0')}`, content: `imported ${i}` }),
      ) as ExportedRecord[];
      const last = many[500] as ExportedRecord;
      many[500] = { ...last, record: { ...last.record, contentHash: 'f'.repeat(64) } };
      await expect(target.engine.importRecords(many)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'records[500].record.contentHash' },
      });
      const twice = [many[0], many[1], many[0]] as ExportedRecord[];
      await expect(target.engine.importRecords(twice)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'records[2].record.id' },
      });
      // Embeddings of two sizes, the second past the first chunk: nothing written either.
      const sized = (id: string, embedding: number[]) =>
        withRecord({ id, content: id, embedding: Float32Array.from(embedding) }) as ExportedRecord;
      const plainThenMixed = [
        ...many.slice(0, 500),
        sized('v-1', [1, 0, 0]),
        sized('v-2', [1, 0, 0, 0]),
      ];
      await expect(target.engine.importRecords(plainThenMixed)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'records[501].record.embedding' },
      });
      expect(await target.store.scanRecords({ limit: 1000 })).toEqual([]);
      expect(await target.store.readAudit({ limit: 1000 })).toEqual([]);
      expect(await target.engine.importRecords(exported)).toEqual({ imported: 1, skipped: 0 });
      // The store's embeddings have a size now: another one is refused before anything is written.
      await target.engine.importRecords([sized('v-3', [1, 0])]);
      await expect(
        target.engine.importRecords([...many.slice(0, 500), sized('v-4', [1, 0, 0])]),
      ).rejects.toMatchObject({ code: 'DIMENSION_MISMATCH' });
      expect(await target.store.scanRecords({ limit: 1000 })).toHaveLength(2);
    });

    it('imports a stream chunk by chunk: a bad item fails it with the chunks before it written, and a rerun skips them', async () => {
      const source = await h.open();
      await source.engine.as('agent-a').remember({ content: 'the only record' });
      const [only] = await exportAll(source.engine);
      const target = await h.open();
      // A stream whose last chunk holds one record still writes it.
      expect(await target.engine.importRecords(stream([only as ExportedRecord]))).toEqual({
        imported: 1,
        skipped: 0,
      });
      const many = Array.from({ length: 501 }, (_, i) =>
        rehashed(only as ExportedRecord, {
          id: `s-${String(i).padStart(4, '0')}`,
          content: `s ${i}`,
        }),
      );
      const bad = many[500] as ExportedRecord;
      const broken = [
        ...many.slice(0, 500),
        { ...bad, record: { ...bad.record, contentHash: 'f'.repeat(64) } },
      ];
      await expect(target.engine.importRecords(stream(broken))).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'records[500].record.contentHash' },
      });
      // Unlike an array, a stream is not read to its end first: the first full chunk is in.
      expect(await target.store.scanRecords({ limit: 1000 })).toHaveLength(501);
      expect(await target.engine.importRecords(stream(many))).toEqual({
        imported: 1,
        skipped: 500,
      });
      expect((await target.engine.verifyRecords()).problems).toEqual([]);
    });

    it('leaves a record whose id exists as it is, grants and plan stats included', async () => {
      const source = await h.open({ experienceMemory: true });
      const a = source.engine.as('agent-a');
      const note = await a.remember({ content: 'a shared note', scope: 'shared' });
      await a.share({ recordId: note.id, with: ['agent-b'], permission: 'read' });
      const plan = await planAccess(a).writePlan({
        query: 'how to x',
        payload: { signature_tokens: ['how'] },
        tokens: ['how'],
      });
      await planAccess(a).updatePlanStats(plan.id, () => ({
        runningOutcome: 0.5,
        replays: 1,
        failures: 0,
        details: {},
      }));
      const exported = await exportAll(source.engine);
      const target = await h.open({ experienceMemory: true });
      expect(await target.engine.importRecords(exported)).toEqual({ imported: 2, skipped: 0 });
      // Changed in the target after the import: a re-import must not roll these back.
      const ta = target.engine.as('agent-a');
      await ta.share({ recordId: note.id, with: ['agent-b'], permission: 'delete' });
      const stats = await planAccess(ta).updatePlanStats(plan.id, () => ({
        runningOutcome: 0.9,
        replays: 4,
        failures: 1,
        details: {},
      }));
      const before = await exportAll(target.engine);
      expect(await target.engine.importRecords(exported)).toEqual({ imported: 0, skipped: 2 });
      const after = await exportAll(target.engine);
      expect(after).toEqual(before);
      expect(
        after.find((item) => item.record.id === note.id)?.grants.map((g) => g.permission),
      ).toEqual(['delete']);
      expect(after.find((item) => item.record.id === plan.id)?.planStats).toEqual(stats);
    });

    it("indexes an imported plan under its payload's tokens once each, so an exact query finds it", async () => {
      const { engine } = await h.open({ experienceMemory: true });
      // Written by hand or by another implementation: its signature tokens repeat one and are unsorted.
      const plan = memoryRecord({
        id: 'plan-1',
        content: 'zzz aaa aaa',
        memoryType: 'procedural',
        tags: [PLAN_TAG],
        metadata: { experience_plan: { signature_tokens: ['zzz', 'aaa', 'aaa'] } },
      });
      expect(await engine.importRecords([{ record: plan, grants: [] }])).toEqual({
        imported: 1,
        skipped: 0,
      });
      // Similarity 1 with the query's two tokens: a plan of exactly two tokens sharing both.
      const found = await planAccess(engine.as('a')).findCandidates({
        tokens: ['aaa', 'zzz'],
        minTokens: 2,
        maxTokens: 2,
        minShared: 2,
      });
      expect(found.map((candidate) => [candidate.record.id, candidate.signatureTokens])).toEqual([
        ['plan-1', ['aaa', 'zzz']],
      ]);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
    });

    it('checks the hash of a live record whose content reads like a redacted one', async () => {
      const source = await h.open({ experienceMemory: true });
      const a = source.engine.as('agent-a');
      await a.remember({ content: 'not redacted at all' });
      const plan = await planAccess(a).writePlan({
        query: 'how to x',
        payload: { signature_tokens: ['how'] },
        tokens: ['how'],
      });
      const stats = await planAccess(a).updatePlanStats(plan.id, () => ({
        runningOutcome: 0,
        replays: 3,
        failures: 3,
        details: {},
      }));
      const exported = await exportAll(source.engine);
      const live = exported.find((item) => item.record.id !== plan.id) as ExportedRecord;
      const target = await h.open({ experienceMemory: true });
      // Only a deleted record may carry the redaction marker without its hash matching.
      const forged = { ...live, record: { ...live.record, content: REDACTED_CONTENT } };
      await expect(target.engine.importRecords([forged])).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'records[0].record.contentHash' },
      });
      expect(await target.store.scanRecords({ limit: 10 })).toEqual([]);
      // A plan that failed every replay is possible: failures may equal replays.
      expect(await target.engine.importRecords(exported)).toEqual({ imported: 2, skipped: 0 });
      expect(
        (await exportAll(target.engine)).find((item) => item.record.id === plan.id)?.planStats,
      ).toEqual(stats);
    });
  });
}

async function engineRecall(handle: {
  recall(input: { query: string }): Promise<unknown>;
}): Promise<void> {
  await handle.recall({ query: 'kept' });
}

/** The record of a JSON line with no hash check, to hand a forged record to importRecords directly. */
function exportFromJsonUnchecked(json: { record: Record<string, unknown> }) {
  const r = json.record;
  const date = (v: unknown) => (v === null ? null : new Date(String(v)));
  return {
    record: {
      ...(r as object),
      embedding: null,
      createdAt: date(r.createdAt),
      updatedAt: date(r.updatedAt),
      expiresAt: date(r.expiresAt),
      deletedAt: date(r.deletedAt),
      lastAccessedAt: date(r.lastAccessedAt),
    } as never,
  };
}

async function exportAll(engine: Engine): Promise<ExportedRecord[]> {
  const all: ExportedRecord[] = [];
  for await (const item of engine.exportRecords()) all.push(item);
  return all;
}

/** The records as a stream, as `mnemo import` reads an NDJSON file. */
async function* stream(items: readonly ExportedRecord[]): AsyncGenerator<ExportedRecord> {
  for (const item of items) yield item;
}

/** `item` with fields changed and its hash recomputed over them, as code building records by hand would. */
function rehashed(item: ExportedRecord, change: Partial<MemoryRecord>): ExportedRecord {
  const record = { ...item.record, ...change };
  return { record: { ...record, contentHash: contentHash(record) }, grants: [] };
}
