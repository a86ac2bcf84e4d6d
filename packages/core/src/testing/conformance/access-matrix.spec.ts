import { planAccess } from '../../engine/plan-access.js';
import { type Permission, permissionLevel, type Scope } from '../../records.js';
import { createHashEmbedder } from '../hash-embedder.js';
import { tally } from '../reliability-tally.js';
import type { Harness, TestApi } from './harness.js';

interface Relation {
  name: string;
  agentId: string;
  orgId: string;
  /** The grant the relation holds on shared, public and global records (private ones cannot be shared). */
  grant: Permission | null;
  expired?: boolean;
}

const OWNER: Relation = { name: 'owner', agentId: 'owner', orgId: 'acme', grant: null };
const RELATIONS: Relation[] = [
  OWNER,
  ...(['read', 'write', 'delete', 'share', 'admin'] as const).map((grant) => ({
    name: `grantee with ${grant}`,
    agentId: `grantee-${grant}`,
    orgId: 'acme',
    grant,
  })),
  {
    name: 'expired grantee',
    agentId: 'grantee-expired',
    orgId: 'acme',
    grant: 'admin',
    expired: true,
  },
  { name: 'agent of the same tenant', agentId: 'colleague', orgId: 'acme', grant: null },
  { name: 'agent of another tenant', agentId: 'outsider', orgId: 'other', grant: null },
];
const SCOPES: Scope[] = ['private', 'shared', 'public', 'global'];

/** The rule of SPEC §2, written out independently of the stores. */
function expectedLevel(scope: Scope, relation: Relation): number {
  if (relation === OWNER) return 5;
  const granted =
    relation.grant !== null && !relation.expired && scope !== 'private'
      ? permissionLevel(relation.grant)
      : 0;
  const visible =
    scope === 'global' ||
    (scope === 'public' && relation.orgId === OWNER.orgId) ||
    (scope === 'shared' && granted > 0);
  if (!visible) return 0;
  return Math.max(scope === 'shared' ? 0 : 1, granted);
}

export function accessMatrixSpec(t: TestApi, h: Harness): void {
  const { describe, it, expect } = t;
  describe('access matrix', () => {
    it('every scope × relation × operation is allowed or denied exactly, and a denial looks like a missing record', async () => {
      const { engine, clock } = await h.open({
        experienceMemory: true,
        embedder: createHashEmbedder({ dimensions: 16 }),
      });
      const owner = engine.as(OWNER.agentId, { orgId: OWNER.orgId });
      const later = new Date(clock.now().getTime() + 1000);
      // One readable record and one plan per scope; one record per scope and relation for each destructive operation.
      const readable = new Map<Scope, string>();
      const plans = new Map<Scope, string>();
      const forgettable = new Map<string, string>();
      const shareable = new Map<string, string>();
      for (const scope of SCOPES) {
        readable.set(
          scope,
          (await owner.remember({ content: `zebra note kept ${scope}`, scope })).id,
        );
        const plan = await planAccess(owner).writePlan({
          query: `matrix ${scope}`,
          scope,
          payload: { scope },
          tokens: ['matrix', scope],
        });
        plans.set(scope, plan.id);
        const written = await owner.rememberMany(
          RELATIONS.flatMap((relation) => [
            { content: `forgettable ${scope} ${relation.agentId}`, scope },
            { content: `shareable ${scope} ${relation.agentId}`, scope },
          ]),
        );
        RELATIONS.forEach((relation, i) => {
          forgettable.set(`${scope}|${relation.name}`, written[2 * i]?.id as string);
          shareable.set(`${scope}|${relation.name}`, written[2 * i + 1]?.id as string);
        });
      }
      for (const scope of SCOPES.filter((s) => s !== 'private')) {
        for (const relation of RELATIONS.filter((r) => r.grant !== null)) {
          const ids = [
            readable.get(scope),
            plans.get(scope),
            forgettable.get(`${scope}|${relation.name}`),
            shareable.get(`${scope}|${relation.name}`),
          ] as string[];
          for (const recordId of ids) {
            await owner.share({
              recordId,
              with: [relation.agentId],
              permission: relation.grant as Permission,
              ...(relation.expired ? { expiresAt: later } : {}),
            });
          }
        }
      }
      clock.set(later);

      const results: Record<string, unknown>[] = [];
      const expectations: Record<string, unknown>[] = [];
      for (const relation of RELATIONS) {
        const handle = engine.as(relation.agentId, { orgId: relation.orgId });
        const visibleScopes = SCOPES.filter((scope) => expectedLevel(scope, relation) > 0);
        const readableIds = new Set(readable.values());
        for (const strategy of ['lexical', 'semantic', 'hybrid'] as const) {
          const { hits } = await handle.recall({ query: 'zebra note kept', strategy, limit: 100 });
          results.push({
            relation: relation.name,
            op: `recall ${strategy}`,
            ids: hits
              .map((hit) => hit.record.id)
              .filter((id) => readableIds.has(id))
              .sort(),
          });
          expectations.push({
            relation: relation.name,
            op: `recall ${strategy}`,
            ids: visibleScopes.map((scope) => readable.get(scope)).sort(),
          });
        }
        const candidates = await planAccess(handle).findCandidates({
          tokens: ['matrix'],
          minTokens: 1,
          maxTokens: 2,
        });
        results.push({
          relation: relation.name,
          op: 'plan candidates',
          ids: candidates.map((c) => c.record.id).sort(),
          count: candidates.length,
        });
        expectations.push({
          relation: relation.name,
          op: 'plan candidates',
          ids: visibleScopes.map((scope) => plans.get(scope)).sort(),
          count: visibleScopes.length,
        });

        for (const scope of SCOPES) {
          const level = expectedLevel(scope, relation);
          const outcome = (promise: Promise<unknown>) =>
            promise.then(
              () => 'allowed',
              (error: { code?: string; message?: string }) => error.code,
            );
          const readId = readable.get(scope) as string;
          const getMessage = await handle.get(readId).then(
            () => 'allowed',
            (error: Error & { code: string }) =>
              `${error.code}: ${error.message.replace(readId, '<id>')}`,
          );
          const missingMessage = await handle.get('no-such-record').then(
            () => 'allowed',
            (error: Error & { code: string }) =>
              `${error.code}: ${error.message.replace('no-such-record', '<id>')}`,
          );
          const forget = await outcome(
            handle.forget({ ids: [forgettable.get(`${scope}|${relation.name}`) as string] }),
          );
          const share = await outcome(
            handle.share({
              recordId: shareable.get(`${scope}|${relation.name}`) as string,
              with: ['someone-new'],
              permission: 'read',
            }),
          );
          results.push({ relation: relation.name, scope, get: getMessage, forget, share });
          expectations.push({
            relation: relation.name,
            scope,
            get: level > 0 ? 'allowed' : missingMessage,
            forget:
              level === 0
                ? 'NOT_FOUND'
                : level >= permissionLevel('delete')
                  ? 'allowed'
                  : 'PERMISSION_DENIED',
            share:
              level === 0
                ? 'NOT_FOUND'
                : level < permissionLevel('share')
                  ? 'PERMISSION_DENIED'
                  : scope === 'private'
                    ? 'INVALID_INPUT'
                    : 'allowed',
          });
        }
      }
      // One case per operation checked: recall per strategy and the plan lookup, then get,
      // forget and share per scope. A case whose outcome differs from the rule counts as a leak.
      const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
      let cases = 0;
      let differing = 0;
      expectations.forEach((expected, i) => {
        const found = results[i] ?? {};
        const outcomes = 'scope' in expected ? ['get', 'forget', 'share'] : ['op'];
        cases += outcomes.length;
        differing +=
          'scope' in expected
            ? outcomes.filter((key) => !same(found[key], expected[key])).length
            : same(found, expected)
              ? 0
              : 1;
      });
      tally({ matrixCases: cases, leaks: differing });
      expect(results).toEqual(expectations);
      expect((await engine.verifyAudit()).ok).toBe(true);
    });
  });
}
