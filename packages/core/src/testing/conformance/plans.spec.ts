import { sha256Hex } from '../../canonical.js';
import { planAccess } from '../../engine/plan-access.js';
import { contentHash } from '../../hashing.js';
import { PLAN_METADATA_KEY, PLAN_TAG } from '../../records.js';
import { codeOf, type Harness, type TestApi } from './harness.js';

export function plansSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('plan records', () => {
    it('stores plans as tagged procedural records with indexed signature tokens', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const plans = planAccess(a);
      const payload = { query: 'reset my password', steps: ['search'] };
      const { id } = await plans.writePlan({
        query: 'reset my password',
        payload,
        tokens: ['password', 'reset'],
      });
      const record = await a.get(id);
      expect([record.memoryType, record.tags, record.metadata, record.scope]).toEqual([
        'procedural',
        [PLAN_TAG],
        { [PLAN_METADATA_KEY]: payload },
        'private',
      ]);
      const candidates = await plans.findCandidates({
        tokens: ['password'],
        minTokens: 1,
        maxTokens: 2,
      });
      expect(candidates.map((c) => [c.record.id, c.signatureTokens])).toEqual([
        [id, ['password', 'reset']],
      ]);
    });

    it('finds exactly the visible plans sharing a token within the size bounds', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const b = engine.as('agent-b');
      const write = (handle: typeof a, tokens: string[], scope?: 'private' | 'public' | 'global') =>
        planAccess(handle).writePlan({
          query: tokens.join(' '),
          payload: { tokens },
          tokens,
          ...(scope ? { scope } : {}),
        });
      const p1 = await write(a, ['alpha', 'beta']);
      const p2 = await write(a, ['alpha', 'beta', 'gamma', 'delta']);
      const p3 = await write(a, ['omega']);
      const p4 = await write(b, ['alpha']);
      const p5 = await write(b, ['alpha', 'zeta'], 'global');
      await a.remember({
        content: 'alpha beta',
        metadata: { [PLAN_METADATA_KEY]: { tokens: ['alpha'] } },
      });
      const find = async (tokens: string[], minTokens: number, maxTokens: number) =>
        (await planAccess(a).findCandidates({ tokens, minTokens, maxTokens }))
          .map((c) => c.record.id)
          .sort();
      expect(await find(['alpha'], 1, 10)).toEqual([p1.id, p2.id, p5.id]);
      expect(await find(['alpha', 'omega'], 1, 2)).toEqual([p1.id, p3.id, p5.id]);
      expect(await find(['beta'], 3, 4)).toEqual([p2.id]);
      expect(await find(['nothing'], 1, 10)).toEqual([]);
      expect(p4.deduplicated).toBe(false);
      await a.forget({ ids: [p1.id] });
      expect(await find(['alpha'], 1, 10)).toEqual([p2.id, p5.id]);
    });

    it('indexes signature tokens of any length', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const plans = planAccess(engine.as('agent-a'));
      // 3,008 hex digits that do not compress: longer than a btree or GIN entry may be.
      let long = '';
      for (let i = 0; long.length < 3000; i += 1) long += sha256Hex(`${long}${i}`);
      const { id } = await plans.writePlan({
        query: `reset ${long}`,
        payload: {},
        tokens: [long, 'reset'],
      });
      const found = await plans.findCandidates({ tokens: [long], minTokens: 1, maxTokens: 2 });
      expect(found.map((c) => [c.record.id, c.signatureTokens])).toEqual([[id, [long, 'reset']]]);
    });

    it('indexes a plan under its distinct signature tokens, however its payload or caller lists them', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const a = engine.as('agent-a');
      const plans = planAccess(a);
      // Unsorted, with a repeat: the set is {password, reset}, which a query of those two words
      // matches exactly. Counted as three, the plan fell outside the bounds of that query.
      const listed = ['reset', 'password', 'reset'];
      const written = await plans.writePlan({
        query: 'reset password',
        payload: { signature_tokens: listed },
        tokens: listed,
      });
      const record = await a.get(written.id);
      const imported = {
        ...record,
        id: `${record.id}-imported`,
        metadata: { [PLAN_METADATA_KEY]: { signature_tokens: listed, steps: ['imported'] } },
      };
      imported.contentHash = contentHash(imported);
      expect(await engine.importRecords([{ record: imported, grants: [] }])).toEqual({
        imported: 1,
        skipped: 0,
      });
      const exact = { tokens: ['password', 'reset'], minTokens: 2, maxTokens: 2, minShared: 2 };
      const found = (await plans.findCandidates(exact))
        .map((c) => [c.record.id, c.signatureTokens])
        .sort();
      expect(found).toEqual([
        [written.id, ['password', 'reset']],
        [imported.id, ['password', 'reset']],
      ]);
    });

    it('counts an access once per touch, however often the id is repeated', async () => {
      const { engine, store, clock } = await h.open({ experienceMemory: true });
      const plans = planAccess(engine.as('agent-a'));
      const { id } = await plans.writePlan({
        query: 'deploy plan',
        payload: {},
        tokens: ['deploy'],
      });
      await store.transaction((tx) => tx.touch([id, id, id], clock.now()));
      const visibility = { agentId: 'agent-a', orgId: null, now: clock.now() };
      const [stored] = await store.get(visibility, [id]);
      const [found] = await plans.findCandidates({
        tokens: ['deploy'],
        minTokens: 1,
        maxTokens: 1,
      });
      expect([stored?.record.accessCount, found?.record.accessCount]).toEqual([1, 1]);
    });

    it('deduplicates an identical plan but keeps plans with different payloads', async () => {
      const { engine } = await h.open({ experienceMemory: true });
      const plans = planAccess(engine.as('agent-a'));
      const first = await plans.writePlan({ query: 'q one', payload: { v: 1 }, tokens: ['one'] });
      const same = await plans.writePlan({ query: 'Q  one', payload: { v: 1 }, tokens: ['one'] });
      const other = await plans.writePlan({ query: 'q one', payload: { v: 2 }, tokens: ['one'] });
      expect([same.id, same.deduplicated, other.deduplicated]).toEqual([first.id, true, false]);
    });

    it("rejects plan tokens that are not strings or not the payload's signature_tokens, writing nothing", async () => {
      const { engine, store } = await h.open({ experienceMemory: true });
      const plans = planAccess(engine.as('agent-a'));
      const holey = new Array<string>(3);
      holey[0] = 'one';
      holey[2] = 'two';
      const signed = { signature_tokens: ['one', 'two'] };
      const bad: [string, unknown, unknown][] = [
        ['tokens not an array', 'one two', {}],
        ['a token not a string', ['one', 2], {}],
        ['tokens with a hole', holey, {}],
        ['tokens other than the signed ones', ['one', 'three'], signed],
        ['fewer tokens than the signed ones', ['one'], signed],
        ['signed tokens not an array', ['one'], { signature_tokens: 'one' }],
      ];
      for (const [label, tokens, payload] of bad) {
        const code = await codeOf(
          plans.writePlan({ query: 'one two', payload: payload as never, tokens: tokens as never }),
        );
        expect({ label, code }).toEqual({ label, code: 'INVALID_INPUT' });
      }
      expect(await store.readAudit({ limit: 10 })).toEqual([]);
      // The same set in another order is the payload's.
      const { id } = await plans.writePlan({
        query: 'one two',
        payload: { signature_tokens: ['two', 'one'] },
        tokens: ['one', 'two'],
      });
      const [candidate] = await plans.findCandidates({
        tokens: ['one'],
        minTokens: 1,
        maxTokens: 2,
      });
      expect([candidate?.record.id, candidate?.signatureTokens]).toEqual([id, ['one', 'two']]);
    });

    it('refuses plan writes when experience memory is off', async () => {
      const { engine, store } = await h.open();
      await expect(
        planAccess(engine.as('agent-a')).writePlan({ query: 'q', payload: {}, tokens: [] }),
      ).rejects.toMatchObject({ code: 'EXPERIENCE_DISABLED' });
      expect(await store.readAudit({ limit: 10 })).toEqual([]);
    });
  });
}
