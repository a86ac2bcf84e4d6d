import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  jaccard,
  PLAN_OUTCOME_WEIGHT,
  recallPlan,
  rememberPlan,
  reportPlanOutcome,
  type SignatureStrategy,
  signatureTokens,
} from '../src/index.js';
import { openEngine, STORES } from './fixture.js';

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
const AGENTS = ['agent-a', 'agent-b', 'agent-c'] as const;
const SCOPES = ['private', 'shared', 'public', 'global'] as const;

const planArbitrary = fc.record({
  owner: fc.constantFrom(...AGENTS),
  words: fc.subarray(WORDS, { minLength: 1, maxLength: 6 }),
  scope: fc.constantFrom(...SCOPES),
  outcomeScore: fc.constantFrom(0.5, 0.75, 1),
  shareWithA: fc.boolean(),
  // Replay outcomes reported by the owner; a running outcome below 0.5 retires the plan.
  reports: fc.array(fc.constantFrom(0, 0.3, 0.9, 1), { maxLength: 2 }),
  forgotten: fc.constantFrom(false, false, false, true),
});

// Both strategies, on every store; the enriched one with fewer runs (same code path).
const CASES = STORES.flatMap((kind) => [
  { kind, strategy: 'default' as SignatureStrategy, numRuns: 30 },
  { kind, strategy: 'enriched' as SignatureStrategy, numRuns: 12 },
]);

describe.each(CASES)(
  'recallPlan is exact on $kind, $strategy signature',
  ({ kind, strategy, numRuns }) => {
    it('returns what a brute-force scan over every visible plan returns', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(planArbitrary, { minLength: 1, maxLength: 25 }),
          fc.subarray(WORDS, { minLength: 1, maxLength: 6 }),
          fc.constantFrom(0.3, 0.5, 0.7, 1),
          async (plans, queryWords, threshold) => {
            const { engine, clock } = await openEngine(
              { experienceMemory: true, experienceSignature: strategy },
              kind,
            );
            const stored: {
              id: string;
              tokens: string[];
              outcome: number;
              at: number;
              visibleToA: boolean;
              owner: string;
              forget: boolean;
            }[] = [];
            for (const plan of plans) {
              clock.advance(1000);
              const handle = engine.as(plan.owner);
              const query = [...plan.words].reverse().join(' ');
              const result = await rememberPlan(handle, {
                query,
                steps: [],
                chunkIds: [],
                outcomeScore: plan.outcomeScore,
                scope: plan.scope,
              });
              if (result.id === null) continue;
              const granted =
                plan.scope === 'shared' && plan.shareWithA && plan.owner !== 'agent-a';
              if (granted) await handle.share({ recordId: result.id, with: ['agent-a'] });
              const known = stored.find((s) => s.id === result.id); // deduplicated
              let outcome = known?.outcome ?? plan.outcomeScore;
              for (const score of plan.reports) {
                await reportPlanOutcome(handle, { planId: result.id, outcomeScore: score });
                outcome = PLAN_OUTCOME_WEIGHT * score + (1 - PLAN_OUTCOME_WEIGHT) * outcome;
              }
              if (known !== undefined) {
                known.outcome = outcome;
                known.visibleToA ||= granted;
                continue;
              }
              const visibleToA =
                plan.owner === 'agent-a' ||
                plan.scope === 'public' ||
                plan.scope === 'global' ||
                granted;
              stored.push({
                id: result.id,
                tokens: signatureTokens(query, strategy),
                outcome,
                at: clock.now().getTime(),
                visibleToA,
                owner: plan.owner,
                forget: plan.forgotten,
              });
            }
            // Forget some plans afterwards (a forgotten plan is never found again).
            for (const target of stored.filter((s) => s.forget)) {
              await engine.as(target.owner).forget({ ids: [target.id] });
              target.visibleToA = false;
            }
            const queryTokens = signatureTokens(queryWords.join(' '), strategy);
            const expected = stored
              .filter((s) => s.visibleToA)
              .map((s) => ({ ...s, similarity: jaccard(queryTokens, s.tokens) }))
              .filter((s) => s.similarity >= threshold && s.outcome >= 0.5)
              .sort(
                (x, y) =>
                  y.similarity - x.similarity ||
                  y.outcome - x.outcome ||
                  y.at - x.at ||
                  (y.id > x.id ? 1 : -1),
              )[0];
            const actual = await recallPlan(engine.as('agent-a'), {
              query: queryWords.join(' '),
              similarityThreshold: threshold,
            });
            expect([actual.plan?.id ?? null, actual.plan?.similarity ?? null]).toEqual([
              expected?.id ?? null,
              expected?.similarity ?? null,
            ]);
            // Every visible plan within the size bounds that shares ⌈t·|A|⌉ tokens was examined.
            const least = Math.max(1, Math.ceil(threshold * queryTokens.length - 1e-9));
            const bounds = (s: { tokens: string[] }) =>
              s.tokens.length >= least &&
              s.tokens.length <= Math.floor(queryTokens.length / threshold + 1e-9) &&
              s.tokens.filter((token) => queryTokens.includes(token)).length >= least;
            expect(actual.candidatesConsidered).toBe(
              stored.filter((s) => s.visibleToA && bounds(s)).length,
            );
            await engine.close();
          },
        ),
        { numRuns, seed: 20261130 },
      );
    }, 240_000);
  },
);
