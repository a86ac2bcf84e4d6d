import { type AuditEvent, type AuditHead, auditEventHash } from '../../audit/audit-event.js';
import { createEngine } from '../../engine/create-engine.js';
import type { MemoryHandle } from '../../engine/memory-handle.js';
import { planAccess } from '../../engine/plan-access.js';
import { contentHash } from '../../hashing.js';
import type { MemoryStore } from '../../ports/memory-store.js';
import type { MemoryRecord } from '../../records.js';
import { tally } from '../reliability-tally.js';
import {
  type ConformanceOptions,
  type Harness,
  replacing,
  type TamperAttack,
  type TestApi,
} from './harness.js';

const CHAIN = 'agent-a';

interface Seeded {
  store: MemoryStore;
  /** The five records' ids, in id order (positions 1 to 5). */
  ids: string[];
  /** The verified heads after seeding, as an application would keep them. */
  heads: AuditHead[];
}

export function tamperSpec(t: TestApi, h: Harness, options: ConformanceOptions): void {
  const { describe, it, expect } = t;
  const tamper = options.tamper;

  /** Five records of agent-a: audit events seq 1 to 5. `prepare` may add legitimate operations. */
  async function seed(
    prepare?: (agent: MemoryHandle, ids: string[]) => Promise<void>,
  ): Promise<Seeded> {
    const { engine, store } = await h.open({ experienceMemory: true });
    const a = engine.as(CHAIN);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      ids.push((await a.remember({ content: `entry ${i}`, tags: ['t'], metadata: { n: i } })).id);
    }
    await prepare?.(a, ids);
    const before = await engine.verifyAudit();
    expect([before.ok, (await engine.verifyRecords()).ok]).toEqual([true, true]);
    return { store, ids, heads: before.heads };
  }

  /** Makes the attack and returns both verifications' findings, closing any store it opened. */
  async function attack(seeded: Seeded, made: TamperAttack, knownHeads?: AuditHead[]) {
    const store = await (tamper as NonNullable<typeof tamper>)(seeded.store, made);
    try {
      const engine = createEngine({ store });
      const audit = await engine.verifyAudit(knownHeads === undefined ? {} : { knownHeads });
      const records = await engine.verifyRecords();
      return {
        audit: audit.problems.map((p) => ({ kind: p.kind, chain: p.chain, seq: p.seq })),
        records: records.problems.map((p) => ({
          kind: p.kind,
          recordId: p.recordId,
          position: p.position,
        })),
      };
    } finally {
      if (store !== seeded.store) await store.close();
    }
  }

  async function eventAt(seeded: Seeded, seq: number): Promise<AuditEvent> {
    const events = await seeded.store.readAudit({ limit: 100 });
    return events.find((e) => e.chain === CHAIN && e.seq === seq) as AuditEvent;
  }

  /** Event `seq` pointed at `prevHash` and signed again: only the link check can tell. */
  async function relinked(seeded: Seeded, seq: number, prevHash: string): Promise<TamperAttack> {
    const hash = auditEventHash({ ...(await eventAt(seeded, seq)), prevHash });
    return { kind: 'relink_event', chain: CHAIN, seq, prevHash, hash };
  }

  /** A sixth record, `shared`, shared with agent-b for reading. */
  async function shareSixth(agent: MemoryHandle, ids: string[]): Promise<void> {
    const { id } = await agent.remember({ content: 'entry shared', scope: 'shared' });
    await agent.share({ recordId: id, with: ['agent-b'] });
    ids.push(id);
  }

  /** A sixth record, a plan, with stats from one poor replay (so it is retired). */
  async function planSixth(agent: MemoryHandle, ids: string[]): Promise<void> {
    const access = planAccess(agent);
    const tokens = ['entry', 'plan'];
    const { id } = await access.writePlan({
      query: 'entry plan',
      payload: { query: 'entry plan', signature_tokens: tokens },
      tokens,
    });
    await access.updatePlanStats(id, () => ({
      runningOutcome: 0.2,
      replays: 1,
      failures: 1,
      details: { outcomeScore: 0.2 },
    }));
    ids.push(id);
  }

  describe('tamper evidence', () => {
    it('legitimate forgets (soft, redact, hard), shares and recalls keep both verifications passing', async () => {
      const { engine } = await h.open();
      const a = engine.as(CHAIN, { orgId: 'acme' });
      const written = await a.rememberMany([
        { content: 'kept entry', scope: 'shared' },
        { content: 'soft entry' },
        { content: 'redacted entry', metadata: { secret: 'x' } },
        { content: 'hard entry' },
      ]);
      const [kept, soft, redacted, hard] = written.map((w) => w.id) as string[];
      await a.share({ recordId: kept as string, with: ['agent-b'] });
      await a.recall({ query: 'entry' });
      await a.forget({ ids: [soft as string] });
      await a.forget({ ids: [redacted as string], mode: 'redact' });
      await a.forget({ ids: [hard as string], mode: 'hard' });
      const audit = await engine.verifyAudit();
      const records = await engine.verifyRecords({ pageSize: 2 });
      expect([audit.ok, audit.events, records.ok, records.records, records.problems]).toEqual([
        true,
        9,
        true,
        3,
        [],
      ]);
    });

    it('grants verify as shares and imports made them: replaced, granted on by a grantee, expiring, and restored from a backup', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as(CHAIN, { orgId: 'acme' });
      const { id } = await a.remember({ content: 'shared entry', scope: 'shared' });
      await a.share({ recordId: id, with: ['agent-b', 'agent-c'], permission: 'share' });
      clock.advance(1000);
      await a.share({ recordId: id, with: ['agent-b'], permission: 'write' });
      clock.advance(1000);
      await engine.as('agent-c', { orgId: 'acme' }).share({
        recordId: id,
        with: ['agent-d'],
        expiresAt: new Date(clock.now().getTime() + 60_000),
      });
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });

      const backup = [];
      for await (const item of engine.exportRecords()) backup.push(item);
      const grants = await store.listGrants([id]);
      expect(
        grants.map((grant) => [grant.granteeAgentId, grant.permission, grant.grantedBy]).sort(),
      ).toEqual([
        ['agent-b', 'write', 'acme/agent-a'],
        ['agent-c', 'share', 'acme/agent-a'],
        ['agent-d', 'read', 'acme/agent-c'],
      ]);
      await a.share({ recordId: id, with: ['agent-e'] });
      clock.advance(1000);
      await a.forget({ ids: [id], mode: 'hard' });
      clock.advance(1000);
      expect(await engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      const imported = (await store.readAudit({ limit: 100 })).filter((e) => e.op === 'import');
      expect(imported.map((event) => event.details)).toEqual([
        {
          contentHash: backup[0]?.record.contentHash,
          deleted: false,
          redacted: false,
          grants: (backup[0]?.grants ?? []).map((grant) => ({
            grantee: grant.granteeAgentId,
            granteeOrgId: 'acme',
            permission: grant.permission,
            grantedBy: grant.grantedBy,
            createdAt: grant.createdAt.toISOString(),
            expiresAt: grant.expiresAt?.toISOString() ?? null,
          })),
        },
      ]);
      expect(imported[0]?.details.grants).toHaveLength(3);
      // agent-e's grant, made after the backup, went with the hard forget: it is not missing.
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
    });

    it('a grant put back as an earlier share of the same granter made it is reported: a later share of theirs replaced it', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as(CHAIN, { orgId: 'acme' });
      const { id } = await a.remember({ content: 'shared entry', scope: 'shared' });
      await a.share({ recordId: id, with: ['agent-b'], permission: 'admin' });
      const before = await store.listGrants([id]);
      clock.advance(1000);
      // The owner takes it back: read only, lapsing in a minute.
      await a.share({
        recordId: id,
        with: ['agent-b'],
        expiresAt: new Date(clock.now().getTime() + 60_000),
      });
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });

      // Behind the engine's back: agent-b's grant as the first share made it.
      await store.transaction((tx) => tx.putGrants(before));
      expect((await store.listGrants([id])).map((grant) => grant.permission)).toEqual(['admin']);
      expect((await engine.verifyRecords()).problems).toEqual([
        {
          kind: 'unaudited_grant',
          recordId: id,
          position: 1,
          message: `record ${id}'s grant to agent-b is not one a share or import made`,
        },
      ]);
    });

    it('a backup imported after a hard forget verifies; the row of a hard-forgotten record put back does not', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as(CHAIN);
      const restored = await a.remember({ content: 'restored from a backup' });
      const erased = await a.remember({ content: 'card 4111 1111 1111 1111' });
      const backup = [];
      for await (const item of engine.exportRecords()) {
        if (item.record.id === restored.id) backup.push(item);
      }
      const rows = await store.scanRecords({ limit: 10 });
      clock.advance(1000);
      await a.forget({ ids: [restored.id, erased.id], mode: 'hard' });
      clock.advance(1000);
      expect(await engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });

      // Behind the engine's back: the erased row as it was, marked deleted.
      const row = rows.find((record) => record.id === erased.id) as MemoryRecord;
      await store.transaction((tx) =>
        tx.insertRecords([
          {
            record: { ...row, deletedAt: clock.now() },
            dedupKey: 'put back',
            isPlan: false,
            terms: [],
            docLength: 0,
            planTokens: null,
          },
        ]),
      );
      expect((await engine.verifyRecords()).problems).toEqual([
        {
          kind: 'undeleted',
          recordId: erased.id,
          position: 2,
          message: `record ${erased.id} was forgotten for good but is back`,
        },
      ]);
      expect((await engine.verifyAudit()).ok).toBe(true);
    });

    it('a redacted record whose remaining fields changed is reported, redacted here or imported redacted', async () => {
      const opened = await h.open();
      const { id } = await opened.engine.as(CHAIN).remember({ content: 'card 4111', tags: ['t'] });
      await opened.engine.as(CHAIN).forget({ ids: [id], mode: 'redact' });
      const backup = [];
      for await (const item of opened.engine.exportRecords()) backup.push(item);
      const copy = await h.open();
      expect(await copy.engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      for (const { engine, store } of [opened, copy]) {
        expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
        // Read back with another tag, as if changed behind the engine's back.
        const retagged = replacing(store, {
          scanRecords: async (page) =>
            (await store.scanRecords(page)).map((row) => ({ ...row, tags: ['t', 'u'] })),
        });
        expect(await createEngine({ store: retagged }).verifyRecords()).toEqual({
          ok: false,
          records: 1,
          problems: [
            {
              kind: 'hash_mismatch',
              recordId: id,
              position: 1,
              message: `record ${id} does not match the hash its redaction recorded`,
            },
          ],
        });
      }
    });

    it.skipIf(tamper === undefined)(
      "a plan whose indexed tokens were changed is no candidate for them: its payload's tokens, which its hash covers, decide",
      async () => {
        const { engine, store } = await h.open({ experienceMemory: true });
        const a = engine.as(CHAIN);
        const write = (query: string, tokens: string[]) =>
          planAccess(a).writePlan({ query, payload: { query, signature_tokens: tokens }, tokens });
        const money = ['accounts', 'between', 'money', 'transfer'];
        const bread = await write('bake sourdough bread', ['bake', 'bread', 'sourdough']);
        const transfer = await write('transfer money between accounts', money);
        const forged = await (tamper as NonNullable<typeof tamper>)(store, {
          kind: 'update_plan_tokens',
          id: bread.id,
          tokens: money,
        });
        try {
          const handle = createEngine({ store: forged, experienceMemory: true }).as(CHAIN);
          const found = await planAccess(handle).findCandidates({
            tokens: money,
            minTokens: 1,
            maxTokens: 10,
          });
          expect(found.map((candidate) => candidate.record.id)).toEqual([transfer.id]);
        } finally {
          if (forged !== store) await forged.close();
        }
      },
    );

    it.skipIf(tamper === undefined)(
      'every attack on records or the audit log is reported, at the first bad position',
      async () => {
        type Case = {
          label: string;
          prepare?: (agent: MemoryHandle, ids: string[]) => Promise<void>;
          attack: (s: Seeded) => TamperAttack | Promise<TamperAttack>;
          knownHeads?: boolean;
          expected: (s: Seeded) => { audit: unknown[]; records: unknown[] };
        };
        const record = (kind: string, position: number) => (s: Seeded) => ({
          audit: [],
          records: [{ kind, recordId: s.ids[position - 1] ?? 'id-forged', position }],
        });
        const event = (kind: string, seq: number) => () => ({
          audit: [{ kind, chain: CHAIN, seq }],
          records: [],
        });
        const cases: Case[] = [
          {
            label: 'changed content',
            attack: (s) => ({ kind: 'update_record', id: s.ids[1] as string, content: 'forged' }),
            expected: record('hash_mismatch', 2),
          },
          {
            label: 'changed metadata only',
            attack: (s) => ({ kind: 'update_record', id: s.ids[2] as string, metadata: { n: 99 } }),
            expected: record('hash_mismatch', 3),
          },
          {
            label: 'changed tags only',
            attack: (s) => ({ kind: 'update_record', id: s.ids[3] as string, tags: ['t', 'u'] }),
            expected: record('hash_mismatch', 4),
          },
          {
            label: 'changed content with a recomputed hash',
            attack: async (s) => {
              const [original] = await s.store.scanRecords({
                afterId: s.ids[0] as string,
                limit: 1,
              });
              const forged = { ...(original as NonNullable<typeof original>), content: 'forged' };
              return {
                kind: 'update_record',
                id: forged.id,
                content: forged.content,
                contentHash: contentHash(forged),
              };
            },
            expected: record('audit_mismatch', 2),
          },
          {
            label: 'a fake redaction',
            attack: (s) => ({
              kind: 'update_record',
              id: s.ids[1] as string,
              content: '[redacted]',
              metadata: {},
              deleted: true,
            }),
            expected: record('hash_mismatch', 2),
          },
          {
            label: 'deleted record',
            attack: (s) => ({ kind: 'delete_record', id: s.ids[2] as string }),
            expected: record('missing', 3),
          },
          {
            label: 'forged record',
            attack: (s) => ({ kind: 'copy_record', id: s.ids[4] as string, newId: 'id-forged' }),
            expected: record('unaudited', 6),
          },
          {
            label: 'record hidden as deleted',
            attack: (s) => ({ kind: 'update_record', id: s.ids[0] as string, deleted: true }),
            expected: record('unaudited_deletion', 1),
          },
          {
            label: 'forgotten record brought back',
            prepare: async (agent, ids) => {
              await agent.forget({ ids: [ids[4] as string] });
            },
            attack: (s) => ({ kind: 'update_record', id: s.ids[4] as string, deleted: false }),
            expected: record('undeleted', 5),
          },
          {
            label: 'redacted record given its content back',
            prepare: async (agent, ids) => {
              await agent.forget({ ids: [ids[3] as string], mode: 'redact' });
            },
            attack: (s) => ({
              kind: 'update_record',
              id: s.ids[3] as string,
              content: 'entry 3',
              metadata: { n: 3 },
            }),
            expected: record('unredacted', 4),
          },
          {
            label: 'redacted record given other tags',
            prepare: async (agent, ids) => {
              await agent.forget({ ids: [ids[3] as string], mode: 'redact' });
            },
            attack: (s) => ({ kind: 'update_record', id: s.ids[3] as string, tags: ['t', 'u'] }),
            expected: record('hash_mismatch', 4),
          },
          {
            label: 'forged grant',
            prepare: shareSixth,
            attack: (s) => ({
              kind: 'copy_grant',
              recordId: s.ids[5] as string,
              granteeAgentId: 'agent-b',
              newGranteeAgentId: 'agent-c',
            }),
            expected: record('unaudited_grant', 6),
          },
          {
            label: 'raised grant',
            prepare: shareSixth,
            attack: (s) => ({
              kind: 'update_grant',
              recordId: s.ids[5] as string,
              granteeAgentId: 'agent-b',
              permission: 'admin',
            }),
            expected: record('unaudited_grant', 6),
          },
          {
            label: 'deleted grant',
            prepare: shareSixth,
            attack: (s) => ({
              kind: 'delete_grant',
              recordId: s.ids[5] as string,
              granteeAgentId: 'agent-b',
            }),
            expected: record('missing_grant', 6),
          },
          {
            label: 'retired plan revived',
            prepare: planSixth,
            attack: (s) => ({
              kind: 'update_plan_stats',
              planId: s.ids[5] as string,
              runningOutcome: 0.9,
            }),
            expected: record('unaudited_plan_stats', 6),
          },
          {
            label: 'deleted plan stats',
            prepare: planSixth,
            attack: (s) => ({ kind: 'delete_plan_stats', planId: s.ids[5] as string }),
            expected: record('unaudited_plan_stats', 6),
          },
          {
            label: 'changed event details',
            attack: () => ({
              kind: 'update_event',
              chain: CHAIN,
              seq: 3,
              details: { forged: true },
            }),
            expected: (s) => ({
              ...event('hash_mismatch', 3)(),
              records: [{ kind: 'unaudited', recordId: s.ids[2], position: 3 }],
            }),
          },
          {
            label: 'deleted event',
            attack: () => ({ kind: 'delete_event', chain: CHAIN, seq: 2 }),
            expected: (s) => ({
              ...event('seq_gap', 2)(),
              records: [{ kind: 'unaudited', recordId: s.ids[1], position: 2 }],
            }),
          },
          {
            label: 'swapped events',
            attack: () => ({ kind: 'swap_events', chain: CHAIN, seqs: [2, 3] }),
            expected: event('hash_mismatch', 2),
          },
          {
            label: 'inserted event',
            attack: () => ({ kind: 'insert_event', chain: CHAIN, seq: 3 }),
            expected: event('hash_mismatch', 3),
          },
          {
            label: 'deleted head event',
            attack: () => ({ kind: 'delete_event', chain: CHAIN, seq: 5 }),
            expected: (s) => ({
              ...event('head_mismatch', 5)(),
              records: [{ kind: 'unaudited', recordId: s.ids[4], position: 5 }],
            }),
          },
          {
            label: 'an event linked past the one before it, and signed again',
            attack: async (s) => relinked(s, 3, (await eventAt(s, 1)).hash),
            expected: event('broken_link', 3),
          },
          {
            label: 'a first event linked to another event, and signed again',
            attack: async (s) => relinked(s, 1, (await eventAt(s, 5)).hash),
            expected: event('broken_link', 1),
          },
          {
            label: 'deleted recorded head',
            attack: () => ({ kind: 'delete_head', chain: CHAIN }),
            expected: event('missing_head', 5),
          },
          {
            label: 'truncated tail, given the head the application kept',
            attack: () => ({ kind: 'truncate_chain', chain: CHAIN, seq: 3 }),
            knownHeads: true,
            expected: (s) => ({
              audit: [{ kind: 'truncated', chain: CHAIN, seq: 4 }],
              records: [
                { kind: 'unaudited', recordId: s.ids[3], position: 4 },
                { kind: 'unaudited', recordId: s.ids[4], position: 5 },
              ],
            }),
          },
        ];
        const outcomes: { label: string; found: unknown; expected: unknown }[] = [];
        for (const c of cases) {
          const seeded = await seed(c.prepare);
          const found = await attack(
            seeded,
            await c.attack(seeded),
            c.knownHeads ? seeded.heads : undefined,
          );
          outcomes.push({ label: c.label, found, expected: c.expected(seeded) });
        }
        const detected = outcomes.filter(
          (o) => JSON.stringify(o.found) === JSON.stringify(o.expected),
        ).length;
        tally({ tamperCasesTried: cases.length, tamperCasesDetected: detected });
        expect(outcomes.map((o) => ({ label: o.label, found: o.found }))).toEqual(
          outcomes.map((o) => ({ label: o.label, found: o.expected })),
        );
      },
    );
  });
}
