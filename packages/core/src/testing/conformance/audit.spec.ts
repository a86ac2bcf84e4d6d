import { GENESIS_HASH } from '../../audit/audit-event.js';
import { createEngine } from '../../engine/create-engine.js';
import { planAccess } from '../../engine/plan-access.js';
import type { ExportedRecord } from '../../engine/transfer.js';
import { type Harness, racedBy, replacing, type TestApi } from './harness.js';

export function auditSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('audit', () => {
    it('keeps one gapless hash chain per principal, and verifies', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b', { orgId: 'acme' });
      const x = await a.remember({ content: 'a one', scope: 'shared' });
      await b.remember({ content: 'b one' });
      await a.remember({ content: 'a two' });
      await a.share({ recordId: x.id, with: ['agent-c'] });
      await b.recall({ query: 'one' });
      await a.forget({ ids: [x.id], mode: 'redact' });
      const events = await store.readAudit({ limit: 100 });
      expect(events.map((e) => [e.chain, e.seq, e.op])).toEqual([
        ['acme/agent-b', 1, 'remember'],
        ['acme/agent-b', 2, 'recall'],
        ['agent-a', 1, 'remember'],
        ['agent-a', 2, 'remember'],
        ['agent-a', 3, 'share'],
        ['agent-a', 4, 'forget'],
      ]);
      for (const [i, e] of events.entries()) {
        const previous = events[i - 1];
        expect(e.prevHash).toBe(previous?.chain === e.chain ? previous.hash : GENESIS_HASH);
      }
      const verification = await engine.verifyAudit();
      expect(verification).toEqual({
        ok: true,
        events: 6,
        chains: 2,
        problems: [],
        heads: [
          { chain: 'acme/agent-b', seq: 2, hash: events[1]?.hash },
          { chain: 'agent-a', seq: 4, hash: events[5]?.hash },
        ],
      });
      expect(await store.auditHeads()).toEqual(verification.heads);
    });

    it('verifies while other calls append events, before, between and after its reads', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      for (const content of ['a one', 'a two']) await a.remember({ content });
      for (const content of ['b one', 'b two']) await b.remember({ content });
      // The verifier reads the heads, then events three at a time. Both chains grow after the
      // heads are read and after the first page (which ends inside agent-a); agent-a once more
      // after the second, which it has passed by then.
      let headReads = 0;
      let pageReads = 0;
      const watched = replacing(store, {
        auditHeads: async () => {
          const heads = await store.auditHeads();
          if (headReads++ === 0) {
            await a.remember({ content: 'a three' });
            await b.remember({ content: 'b three' });
          }
          return heads;
        },
        readAudit: async (options) => {
          const page = await store.readAudit(options);
          pageReads += 1;
          if (pageReads === 1) {
            await a.remember({ content: 'a four' });
            await b.remember({ content: 'b four' });
          }
          if (pageReads === 2) await a.remember({ content: 'a five' });
          return page;
        },
      });
      const verification = await createEngine({ store: watched }).verifyAudit({ pageSize: 3 });
      const events = await store.readAudit({ limit: 100 });
      const hashOf = (chain: string, seq: number) =>
        events.find((event) => event.chain === chain && event.seq === seq)?.hash;
      expect(verification).toEqual({
        ok: true,
        events: 8,
        chains: 2,
        problems: [],
        heads: [
          { chain: 'agent-a', seq: 4, hash: hashOf('agent-a', 4) },
          { chain: 'agent-b', seq: 4, hash: hashOf('agent-b', 4) },
        ],
      });
      expect(events.map((event) => [event.chain, event.seq])).toEqual([
        ['agent-a', 1],
        ['agent-a', 2],
        ['agent-a', 3],
        ['agent-a', 4],
        ['agent-a', 5],
        ['agent-b', 1],
        ['agent-b', 2],
        ['agent-b', 3],
        ['agent-b', 4],
      ]);
      expect(await engine.verifyAudit()).toMatchObject({ ok: true, events: 9 });
    });

    it('a chain that grew during the verification must still pass through the head read before it', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      for (const content of ['a one', 'a two']) await a.remember({ content });
      // The first read of the heads names seq 2 with another hash (as if the chain were
      // rewritten meanwhile); the chain then grows to seq 3 before its events are read.
      let headReads = 0;
      const watched = replacing(store, {
        auditHeads: async () => {
          const heads = await store.auditHeads();
          if (headReads++ > 0) return heads;
          await a.remember({ content: 'a three' });
          return heads.map((head) => ({ ...head, hash: 'f'.repeat(64) }));
        },
      });
      expect((await createEngine({ store: watched }).verifyAudit()).problems).toEqual([
        {
          kind: 'head_mismatch',
          chain: 'agent-a',
          seq: 4,
          eventId: null,
          message: 'chain agent-a: recorded head is seq 3, the events end at seq 3',
        },
      ]);
      expect((await engine.verifyAudit()).ok).toBe(true);
    });

    it('pages through long chains and checks known heads', async () => {
      const { engine } = await h.open();
      const a = engine.as('agent-a');
      for (let i = 0; i < 12; i += 1) await a.remember({ content: `event ${i}` });
      const first = await engine.verifyAudit({ pageSize: 5 });
      expect([first.ok, first.events, first.heads[0]?.seq]).toEqual([true, 12, 12]);
      await a.remember({ content: 'one more' });
      expect((await engine.verifyAudit({ knownHeads: first.heads, pageSize: 5 })).ok).toBe(true);
      const forged = [{ chain: 'agent-a', seq: 12, hash: 'f'.repeat(64) }];
      expect((await engine.verifyAudit({ knownHeads: forged })).problems).toEqual([
        {
          kind: 'truncated',
          chain: 'agent-a',
          seq: 13,
          eventId: null,
          message: 'chain agent-a no longer reaches the known head at seq 12',
        },
      ]);
      const beyond = [{ chain: 'agent-a', seq: 20, hash: 'f'.repeat(64) }];
      expect(
        (await engine.verifyAudit({ knownHeads: beyond })).problems.map((p) => [p.kind, p.seq]),
      ).toEqual([['truncated', 14]]);
      for (const bad of [
        { pageSize: 0 },
        { pageSize: 1.5 },
        { knownHeads: 'x' },
        { knownHeads: [{ chain: 'a', seq: 0, hash: 'h' }] },
        { knownHeads: [null] },
      ]) {
        await expect(engine.verifyAudit(bad as never)).rejects.toMatchObject({
          code: 'INVALID_INPUT',
        });
      }
      const vanished = [{ chain: 'agent-z', seq: 3, hash: 'f'.repeat(64) }];
      expect(
        (await engine.verifyAudit({ knownHeads: vanished })).problems.map((p) => [
          p.kind,
          p.chain,
          p.seq,
        ]),
      ).toEqual([['truncated', 'agent-z', 1]]);
    });

    it('checks every known head of a chain, whatever their order, and refuses a list with holes', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      for (const n of [1, 2, 3]) await a.remember({ content: `note ${n}` });
      const early = (await engine.verifyAudit()).heads;
      for (const n of [4, 5]) await a.remember({ content: `note ${n}` });
      const late = (await engine.verifyAudit()).heads;
      // The tail cut off after seq 3, and the recorded head set back to it.
      const truncated = replacing(store, {
        readAudit: async (page) => (await store.readAudit(page)).filter((event) => event.seq <= 3),
        auditHeads: async () => early,
      });
      const verifier = createEngine({ store: truncated });
      const problem = {
        kind: 'truncated',
        chain: 'agent-a',
        seq: 4,
        eventId: null,
        message: 'chain agent-a no longer reaches the known head at seq 5',
      };
      for (const knownHeads of [
        [...early, ...late],
        [...late, ...early],
      ]) {
        expect((await verifier.verifyAudit({ knownHeads })).problems).toEqual([problem]);
      }
      expect((await engine.verifyAudit({ knownHeads: [...late, ...early] })).ok).toBe(true);
      // A list with a hole, as `map` and `forEach` skip it.
      const holey = new Array<(typeof late)[number]>(2);
      holey[1] = late[0] as (typeof late)[number];
      await expect(engine.verifyAudit({ knownHeads: holey })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'knownHeads[0]' },
      });
    });

    it('verifies records while other calls write and forget, and still reports a change made behind its back', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const ids: string[] = [];
      for (const n of [1, 2, 3, 4]) ids.push((await a.remember({ content: `note ${n}` })).id);
      const [first, second, third, fourth] = ids as [string, string, string, string];
      const shared = await a.remember({ content: 'note shared', scope: 'shared' });
      // Once the verifier has read the log, before it reads the records: a write, a share, a
      // forget of each mode, and a deletion no event records.
      let written = '';
      let scans = 0;
      const watched = replacing(store, {
        scanRecords: async (options) => {
          if (scans++ === 0) {
            written = (await a.remember({ content: 'note 5' })).id;
            await a.share({ recordId: shared.id, with: ['agent-b'] });
            await a.forget({ ids: [second], mode: 'soft' });
            await a.forget({ ids: [third], mode: 'hard' });
            await a.forget({ ids: [fourth], mode: 'redact' });
            await store.transaction((tx) => tx.deleteRecords([first], 'soft', clock.now()));
          }
          return store.scanRecords(options);
        },
      });
      expect(await createEngine({ store: watched }).verifyRecords({ pageSize: 1 })).toEqual({
        ok: false,
        records: 5,
        problems: [
          {
            kind: 'unaudited_deletion',
            recordId: first,
            position: 1,
            message: `record ${first} is marked deleted, but no forget names it`,
          },
        ],
      });
      expect((await engine.verifyRecords()).problems.map((problem) => problem.recordId)).toEqual([
        first,
      ]);
      expect((await a.get(written)).content).toBe('note 5');
    });

    it('verifies records and grants after shares, regrants, expiries, forgets, plans, purges and backups, with and without orgs', async () => {
      const { engine, clock } = await h.open({ experienceMemory: true });
      const x = engine.as('x');
      const orgless = await x.remember({ content: 'shared without an org', scope: 'shared' });
      await x.share({ recordId: orgless.id, with: ['y'], permission: 'share' });
      await engine.as('y').share({ recordId: orgless.id, with: ['z'] });
      const a = engine.as('a', { orgId: 'acme' });
      const acme = await a.remember({ content: 'shared in acme', scope: 'shared' });
      await a.share({ recordId: acme.id, with: ['b'], permission: 'admin' });
      await engine.as('b', { orgId: 'acme' }).share({
        recordId: acme.id,
        with: ['c'],
        permission: 'share',
        expiresAt: new Date(clock.now().getTime() + 1000),
      });
      clock.advance(2000);
      await a.share({ recordId: acme.id, with: ['c'] });
      // The same agent id in another org: another principal, another chain.
      const globex = engine.as('a', { orgId: 'globex' });
      const other = await globex.remember({ content: 'shared in globex', scope: 'shared' });
      await globex.share({ recordId: other.id, with: ['b'], permission: 'write' });
      const forgotten: string[] = [];
      for (const mode of ['soft', 'redact', 'hard'] as const) {
        const { id } = await a.remember({ content: `forgotten ${mode}`, scope: 'shared' });
        await a.share({ recordId: id, with: ['b'] });
        await a.forget({ ids: [id], mode });
        forgotten.push(id);
      }
      const expiring = await a.remember({
        content: 'expiring soon',
        scope: 'shared',
        expiresAt: new Date(clock.now().getTime() + 500),
      });
      await a.share({ recordId: expiring.id, with: ['b'] });
      const plan = await planAccess(a).writePlan({
        query: 'plan query words',
        scope: 'shared',
        payload: { signature_tokens: ['plan', 'query', 'words'] },
        tokens: ['plan', 'query', 'words'],
      });
      await a.share({ recordId: plan.id, with: ['b'] });
      expect(await engine.verifyRecords()).toMatchObject({ ok: true, problems: [] });

      // Exported (deleted and redacted records with their grants too) into a new store, and
      // from there into a third.
      const backup: ExportedRecord[] = [];
      for await (const item of engine.exportRecords()) backup.push(item);
      const copy = await h.open();
      expect(await copy.engine.importRecords(backup)).toEqual({ imported: 7, skipped: 0 });
      expect(await copy.engine.verifyRecords()).toMatchObject({ ok: true, problems: [] });
      const again: ExportedRecord[] = [];
      for await (const item of copy.engine.exportRecords()) again.push(item);
      const third = await h.open();
      await third.engine.importRecords(again);
      expect(await third.engine.verifyRecords()).toMatchObject({ ok: true, problems: [] });
      // Imported grants changed by their granters, and granted on by a grantee.
      await copy.engine.as('a', { orgId: 'acme' }).share({
        recordId: acme.id,
        with: ['c'],
        permission: 'write',
      });
      await copy.engine.as('b', { orgId: 'acme' }).share({ recordId: acme.id, with: ['d'] });
      expect(await copy.engine.verifyRecords()).toMatchObject({ ok: true, problems: [] });
      expect((await copy.engine.verifyAudit()).ok).toBe(true);

      clock.advance(1000);
      expect(await engine.purgeExpired()).toEqual({ purged: 1 });
      expect(await engine.verifyRecords()).toMatchObject({ ok: true, problems: [] });
      // Forgotten for good and restored from the backup in the same millisecond.
      await a.forget({ ids: [acme.id], mode: 'hard' });
      expect(
        await engine.importRecords(backup.filter((item) => item.record.id === acme.id)),
      ).toEqual({ imported: 1, skipped: 0 });
      expect(await engine.verifyRecords()).toMatchObject({ ok: true, problems: [] });
      expect((await engine.verifyAudit()).ok).toBe(true);
    });

    it("verifies a record restored after a hard forget that raced another agent's share (the forget read its clock first)", async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const c = engine.as('agent-c');
      const { id } = await a.remember({ content: 'shared, forgotten, restored', scope: 'shared' });
      await a.share({ recordId: id, with: ['agent-b'], permission: 'admin' });
      await a.share({ recordId: id, with: ['agent-c'], permission: 'share' });
      const backup: ExportedRecord[] = [];
      for await (const item of engine.exportRecords()) backup.push(item);
      // agent-b's hard forget reads the clock, then waits while agent-c's share (later by the
      // clock) commits: the forget removes the grant that share made.
      const racing = racedBy(store, async () => {
        clock.advance(1000);
        await c.share({ recordId: id, with: ['agent-d'] });
      });
      await createEngine({ store: racing.store, clock })
        .as('agent-b')
        .forget({ ids: [id], mode: 'hard' });
      expect(racing.raced()).toBe(true);
      clock.advance(1000);
      // Restored into the owner's chain, agent-a's.
      expect(await engine.importRecords(backup)).toEqual({ imported: 1, skipped: 0 });
      expect((await store.listGrants([id])).map((grant) => grant.granteeAgentId).sort()).toEqual([
        'agent-b',
        'agent-c',
      ]);
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });

      // The grants the restore brought back must still be held, and so must later shares: one
      // by the forgetting agent in the restore's millisecond, one by another agent after it.
      await b.share({ recordId: id, with: ['agent-e'] });
      clock.advance(1000);
      await c.share({ recordId: id, with: ['agent-f'] });
      expect(await engine.verifyRecords()).toEqual({ ok: true, records: 1, problems: [] });
      for (const gone of ['agent-b', 'agent-e', 'agent-f']) {
        const dropped = replacing(store, {
          listGrants: async (ids) =>
            (await store.listGrants(ids)).filter((grant) => grant.granteeAgentId !== gone),
        });
        expect(await createEngine({ store: dropped }).verifyRecords(), gone).toEqual({
          ok: false,
          records: 1,
          problems: [
            {
              kind: 'missing_grant',
              recordId: id,
              position: 1,
              message: `record ${id}'s grant to ${gone} was made by a share or import, and is gone`,
            },
          ],
        });
      }
    });

    it('verifies records while a record written after the log was read is shared or forgotten after the scan', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      await a.remember({ content: 'already there' });
      // Written once the verifier has read the log, before it scans the records; then, once it
      // has scanned them, before it reads the log again: shared, forgotten, or forgotten for good.
      // The record it scanned is one the log made, at a time between its two reads.
      for (const after of ['share', 'soft', 'hard'] as const) {
        let id = '';
        const watched = replacing(store, {
          scanRecords: async (options) => {
            if (id === '')
              ({ id } = await a.remember({ content: `written then ${after}`, scope: 'shared' }));
            return store.scanRecords(options);
          },
          listGrants: async (recordIds) => {
            const grants = await store.listGrants(recordIds);
            if (after === 'share') await a.share({ recordId: id, with: ['agent-b'] });
            else await a.forget({ ids: [id], mode: after });
            return grants;
          },
        });
        expect(
          (await createEngine({ store: watched }).verifyRecords()).problems.map(
            (problem) => problem.kind,
          ),
          after,
        ).toEqual([]);
      }
      expect((await engine.verifyRecords()).ok).toBe(true);
    });

    it('verifies records while a hard forget removes one after it read the log', async () => {
      const { engine, store } = await h.open();
      const a = engine.as('agent-a');
      const kept = await a.remember({ content: 'kept' });
      const gone = await a.remember({ content: 'gone' });
      let scans = 0;
      const watched = replacing(store, {
        scanRecords: async (options) => {
          if (scans++ === 0) await a.forget({ ids: [gone.id], mode: 'hard' });
          return store.scanRecords(options);
        },
      });
      expect(await createEngine({ store: watched }).verifyRecords()).toEqual({
        ok: true,
        records: 1,
        problems: [],
      });
      expect((await a.getMany([kept.id, gone.id])).map((record) => record.id)).toEqual([kept.id]);
    });

    it('places vanished records where they would stand in id order, and moves the others behind them, on any page size', async () => {
      const { engine, store, clock } = await h.open();
      const a = engine.as('agent-a');
      const ids: string[] = [];
      for (const n of [1, 2, 3, 4, 5]) ids.push((await a.remember({ content: `note ${n}` })).id);
      const [, second, third, fourth, fifth] = ids as [string, string, string, string, string];
      // Behind the engine's back: three rows removed and one marked deleted, none audited.
      await store.transaction(async (tx) => {
        await tx.deleteRecords([second, fourth, fifth], 'hard', clock.now());
        await tx.deleteRecords([third], 'soft', clock.now());
      });
      // The store holds the first and third. Every record, held or missing, stands at its place
      // in id order: the third at 3, behind the missing second.
      const expected = [
        ['missing', second, 2],
        ['unaudited_deletion', third, 3],
        ['missing', fourth, 4],
        ['missing', fifth, 5],
      ];
      for (const pageSize of [1, 2, 1000]) {
        const verification = await engine.verifyRecords({ pageSize });
        expect([verification.ok, verification.records]).toEqual([false, 2]);
        expect(
          verification.problems.map((problem) => [
            problem.kind,
            problem.recordId,
            problem.position,
          ]),
        ).toEqual(expected);
      }
      await expect(engine.verifyRecords({ pageSize: 0 })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        details: { field: 'pageSize' },
      });
    });
  });
}
