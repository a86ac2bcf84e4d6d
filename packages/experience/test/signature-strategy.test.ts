import { createEngine, type MemoryHandle, MnemoError, planAccess } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import {
  ENRICHED_PREFIX,
  jaccard,
  PLAN_METADATA_KEY,
  recallPlan,
  rememberPlan,
  SIGNATURE_STRATEGIES,
  signatureTokens,
  withExperienceMemory,
} from '../src/index.js';
import { openEngine, STORES } from './fixture.js';

const enriched = (query: string) => signatureTokens(query, 'enriched');
const strip = (tokens: string[]) => tokens.map((token) => token.slice(ENRICHED_PREFIX.length));

describe('signatureTokens(query, strategy)', () => {
  it('keeps SPEC §4 as the default', () => {
    expect(SIGNATURE_STRATEGIES).toEqual(['default', 'enriched']);
    for (const query of ['how do I reset my password', 'Move $20 from checking to savings']) {
      expect(signatureTokens(query, 'default')).toEqual(signatureTokens(query));
    }
    expect(signatureTokens('Move $20 from checking to savings')).toEqual([
      'checking',
      'from',
      'move',
      'savings',
    ]);
  });

  it('prefixes every enriched token with a character no default token contains', () => {
    const tokens = enriched('Move $20 from checking to savings, not to brokerage');
    expect(tokens.length).toBeGreaterThan(0);
    for (const token of tokens) expect(token.startsWith(ENRICHED_PREFIX)).toBe(true);
    expect(/[\p{Alphabetic}\p{N}]/u.test(ENRICHED_PREFIX)).toBe(false);
  });

  it('removes filler, stems, and keeps pronouns, question words and "did"', () => {
    expect(strip(enriched('Could you please tell me what my credit limits are?'))).toEqual([
      'credit',
      'limit',
      'my',
      'what',
      'you',
    ]);
    expect(strip(enriched('when did i change my oil'))).toEqual([
      'chang',
      'did',
      'i',
      'my',
      'oil',
      'when',
    ]);
    // A query of filler only keeps its filler, so it still has a signature.
    expect(strip(enriched('can you help me'))).toEqual(['you']);
    expect(strip(enriched('could it be'))).toEqual(['be', 'could', 'it']);
  });

  it('turns amounts, times and dates into slots', () => {
    expect(enriched('set an alarm for 7am on Friday')).toEqual(
      enriched('set an alarm for 6pm on monday'),
    );
    expect(strip(enriched('pay 250 dollars on march 3rd'))).toEqual([
      '#month',
      '#num',
      '#ordinal',
      'dollar',
      'pai',
    ]);
    expect(enriched('send twenty bucks')).toEqual(enriched('send 45 bucks'));
  });

  it('marks negated words up to the end of the clause', () => {
    expect(strip(enriched("don't cancel my order, I want it"))).toEqual([
      'i',
      '¬',
      '¬cancel',
      '¬my',
      '¬order',
    ]);
    expect(enriched('do not cancel my order')).toEqual(enriched("don't cancel my order"));
    expect(strip(enriched("i don't know"))).toEqual(['i', '¬', '¬know']);
  });

  it('gives "from X to Y" a direction', () => {
    const forward = enriched('transfer 100 dollars from checking to savings');
    const backward = enriched('transfer 100 dollars from savings to checking');
    expect(strip(forward)).toEqual([
      '#num',
      'check>save',
      'dollar',
      'from:check',
      'to:save',
      'transfer',
    ]);
    expect(strip(backward)).toContain('save>check');
    // "to" without "from" is mostly an infinitive, not a direction.
    expect(strip(enriched('i want to cancel'))).toEqual(['cancel', 'i']);
    // A role skips a determiner to reach its word.
    expect(enriched('move it from my checking to my savings')).toEqual(
      enriched('move it from checking to savings').concat(`${ENRICHED_PREFIX}my`).sort(),
    );
  });

  it('slots times (and "pm"), ordinals, number words, months and days, but not "may"', () => {
    expect(strip(enriched('wake me at 7am'))).toEqual(['#time', 'wake']);
    expect(enriched('wake me at 10pm')).toEqual(enriched('wake me at 7am'));
    expect(strip(enriched('wake me at 7 pm'))).toEqual(['#num', '#time', 'wake']);
    expect(strip(enriched('the 22nd of june'))).toEqual(['#month', '#ordinal']);
    expect(strip(enriched('twenty on tuesday, tonight or this weekend'))).toEqual(['#day', '#num']);
    expect(strip(enriched('may i'))).toEqual(['i', 'mai']);
  });

  it('expands contractions and drops other clitics, typographic apostrophes too', () => {
    expect(strip(enriched("i won't pay"))).toEqual(['i', '¬', '¬pai']);
    expect(enriched("i won't pay")).toEqual(enriched('i will not pay'));
    expect(enriched("you can't stop")).toEqual(enriched('you can not stop'));
    expect(strip(enriched("it's the user's order"))).toEqual(['order', 'user']);
    expect(enriched('it\u2019s the user\u02bcs order')).toEqual(enriched("it's the user's order"));
  });

  it('ends negation at the clause, "but" included, and knows every negation word', () => {
    expect(strip(enriched("don't cancel my order but renew it"))).toEqual([
      'renew',
      '¬',
      '¬cancel',
      '¬my',
      '¬order',
    ]);
    expect(strip(enriched('nor renew, cannot cancel, without fees'))).toEqual([
      '¬',
      '¬cancel',
      '¬fee',
      '¬renew',
    ]);
  });

  it('cuts at "but" and finds clitics only at the edges of words, letters beyond ASCII included', () => {
    // JavaScript's \b knows only ASCII letters: "début" was cut at its "but", and the "'d" of
    // "o'dálaigh" taken for a clitic.
    expect(strip(enriched('when is the début of the film'))).toEqual(['début', 'film', 'when']);
    expect(strip(enriched("don't cancel the butão trip"))).toEqual([
      '¬',
      '¬butão',
      '¬cancel',
      '¬trip',
    ]);
    expect(strip(enriched("o'dálaigh's notes"))).toEqual(['note', 'odálaigh']);
    expect(strip(enriched("o'donnell's notes"))).toEqual(['note', 'odonnel']);
  });

  it('gives "into" a direction on its own, but "to" only after "from"', () => {
    expect(strip(enriched('copy it into my notes to share'))).toEqual([
      'copi',
      'my',
      'share',
      'to:note',
    ]);
  });

  it('applies NFKC before anything else', () => {
    expect(enriched('ＲＥＳＥＴ ｐａｓｓｗｏｒｄ')).toEqual(enriched('reset password'));
  });

  it('rejects an unknown strategy, or a query that is not a string, with INVALID_INPUT', () => {
    expect(() => signatureTokens('x', 'fancy' as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    for (const query of [123, null, undefined, ['a b c']]) {
      expect(() => signatureTokens(query as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', details: { field: 'query' } }),
      );
    }
  });
});

describe('choosing the strategy', () => {
  it('is per engine: createEngine, engine.with and withExperienceMemory; default stays default', async () => {
    const { engine, store } = await openEngine();
    expect(engine.experienceSignature).toBe('default');
    expect(withExperienceMemory(engine).experienceSignature).toBe('default');
    const rich = withExperienceMemory(engine, { signature: 'enriched' });
    expect([rich.experienceMemory, rich.experienceSignature]).toEqual([true, 'enriched']);
    expect(withExperienceMemory(rich).experienceSignature).toBe('enriched');
    expect(rich.with({ experienceSignature: 'default' }).experienceSignature).toBe('default');
    expect(createEngine({ store, experienceSignature: 'enriched' }).experienceSignature).toBe(
      'enriched',
    );
    expect(planAccess(rich.as('agent-a')).signatureStrategy).toBe('enriched');
  });

  it('rejects an unknown strategy or option with INVALID_INPUT', async () => {
    const { engine, store } = await openEngine();
    // Each names the option its caller passed.
    const attempts: [() => unknown, string][] = [
      [
        () => createEngine({ store, experienceSignature: 'fancy' as never }),
        'options.experienceSignature',
      ],
      [
        () => createEngine({ store, experienceSignature: null as never }),
        'options.experienceSignature',
      ],
      [
        () => engine.with({ experienceSignature: 'DEFAULT' as never }),
        'options.experienceSignature',
      ],
      [
        () => withExperienceMemory(engine, { signature: 'bag-of-words' as never }),
        'options.signature',
      ],
      [() => withExperienceMemory(engine, { strategy: 'enriched' } as never), 'options.strategy'],
      [() => withExperienceMemory(engine, null as never), 'options'],
    ];
    for (const [attempt, field] of attempts) {
      let error: unknown;
      try {
        attempt();
      } catch (caught) {
        error = caught;
      }
      expect(MnemoError.isInstance(error) && [error.code, error.details.field]).toEqual([
        'INVALID_INPUT',
        field,
      ]);
    }
  });
});

/** Accounts for the directional plans; only one orientation of each pair is stored. */
const ACCOUNTS = ['checking', 'savings', 'brokerage', 'business', 'joint', 'retirement'];
const DIRECTIONAL = ACCOUNTS.flatMap((from, i) =>
  ACCOUNTS.slice(i + 1).map((to, j) => ({
    stored: `please transfer ${100 + 10 * (i + j)} dollars from my ${from} account to my ${to} account`,
    paraphrase: `i want to transfer ${35 + i} dollars from my ${from} account into my ${to} account`,
    swapped: `please transfer ${100 + 10 * (i + j)} dollars from my ${to} account to my ${from} account`,
  })),
);
const ACTIONS = [
  ['cancel', 'dinner reservation'],
  ['delete', 'shopping list'],
  ['freeze', 'credit card'],
  ['book', 'flight to boston'],
  ['share', 'current location'],
  ['renew', 'gym membership'],
  ['schedule', 'oil change'],
  ['update', 'workout playlist'],
] as const;
const NEGATABLE = ACTIONS.flatMap(([verb, object]) => [
  {
    stored: `${verb} my ${object} today`,
    paraphrase: `please ${verb} my ${object} tomorrow`,
    negated: [
      `do not ${verb} my ${object} today`,
      `don't ${verb} my ${object} today`,
      `never ${verb} my ${object} today`,
    ],
  },
]);

async function storePlans(handle: MemoryHandle, queries: readonly string[]): Promise<void> {
  for (const [index, query] of queries.entries()) {
    const result = await rememberPlan(handle, {
      query,
      steps: [`plan-${index}`],
      chunkIds: [],
      outcomeScore: 0.9,
    });
    expect(result.stored).toBe(true);
  }
}

async function replays(handle: MemoryHandle, queries: readonly string[]): Promise<number> {
  let hits = 0;
  for (const query of queries) {
    if ((await recallPlan(handle, { query })).plan !== null) hits += 1;
  }
  return hits;
}

describe.each(STORES)('signature strategies on %s', (kind) => {
  it('records the strategy in the payload (absent for default, as before)', async () => {
    const { engine } = await openEngine({}, kind);
    const plain = withExperienceMemory(engine).as('agent-a');
    const rich = withExperienceMemory(engine, { signature: 'enriched' }).as('agent-a');
    const query = 'Move $20 from checking to savings';
    const a = await rememberPlan(plain, { query, steps: ['s'], chunkIds: [], outcomeScore: 1 });
    const b = await rememberPlan(rich, { query, steps: ['s'], chunkIds: [], outcomeScore: 1 });
    expect(a.signature).toEqual(signatureTokens(query));
    expect(b.signature).toEqual(enriched(query));
    expect(a.id).not.toBe(b.id);
    expect((await plain.get(a.id as string)).metadata[PLAN_METADATA_KEY]).toEqual({
      query,
      signature_tokens: signatureTokens(query),
      steps: ['s'],
      chunk_ids: [],
      outcome_score: 1,
      chunk_hashes: [],
    });
    expect((await plain.get(b.id as string)).metadata[PLAN_METADATA_KEY]).toEqual({
      query,
      signature_tokens: enriched(query),
      steps: ['s'],
      chunk_ids: [],
      outcome_score: 1,
      signature_strategy: 'enriched',
      chunk_hashes: [],
    });
    expect((await engine.verifyAudit()).ok).toBe(true);
  });

  it('never compares a query with plans of the other strategy', async () => {
    const { engine } = await openEngine({}, kind);
    const plain = withExperienceMemory(engine).as('agent-a');
    const rich = withExperienceMemory(engine, { signature: 'enriched' }).as('agent-a');
    await rememberPlan(plain, {
      query: 'reset my password now',
      steps: ['default'],
      chunkIds: [],
      outcomeScore: 1,
    });
    expect(
      await recallPlan(rich, { query: 'reset my password now', similarityThreshold: 0.01 }),
    ).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
    await rememberPlan(rich, {
      query: 'export invoices to csv',
      steps: ['enriched'],
      chunkIds: [],
      outcomeScore: 1,
    });
    expect(
      await recallPlan(plain, { query: 'export invoices to csv', similarityThreshold: 0.01 }),
    ).toEqual({
      plan: null,
      candidatesConsidered: 0,
      stale: 0,
      retired: 0,
    });
    const own = await recallPlan(rich, { query: 'Export my invoices to CSV' });
    expect([own.plan?.steps, own.candidatesConsidered]).toEqual([['enriched'], 1]);
    const other = await recallPlan(plain, { query: 'reset password now' });
    expect([other.plan?.steps, other.candidatesConsidered]).toEqual([['default'], 1]);
  });

  it('stores and matches enriched tokens of any length', async () => {
    const { engine } = await openEngine({}, kind);
    const rich = withExperienceMemory(engine, { signature: 'enriched' }).as('agent-a');
    const long = 'x'.repeat(5000);
    const query = `from ${long} to ${'ü'.repeat(3000)} please`;
    const stored = await rememberPlan(rich, { query, steps: ['s'], chunkIds: [], outcomeScore: 1 });
    expect(stored.signature.some((token) => token.length > 8000)).toBe(true);
    const hit = await recallPlan(rich, { query: `please, from ${long} to ${'ü'.repeat(3000)}` });
    expect([hit.plan?.id, hit.plan?.similarity]).toEqual([stored.id, 1]);
  });

  it('checks the recorded strategy even when the tokens would match', async () => {
    const { engine } = await openEngine({}, kind);
    const rich = withExperienceMemory(engine, { signature: 'enriched' }).as('agent-a');
    const query = 'export invoices to csv';
    const access = planAccess(rich);
    // A plan whose tokens look enriched but whose payload says default.
    await access.writePlan({
      query,
      tokens: enriched(query),
      payload: access.validatePayload({
        query,
        signature_tokens: enriched(query),
        steps: ['forged'],
        chunk_ids: [],
        outcome_score: 1,
      }),
    });
    expect(await recallPlan(rich, { query })).toEqual({
      plan: null,
      candidatesConsidered: 1,
      stale: 0,
      retired: 0,
    });
  });

  it('enriched replays paraphrases but none of the order-swapped or negated variants', async () => {
    const { engine } = await openEngine({}, kind);
    const rich = withExperienceMemory(engine, { signature: 'enriched' }).as('agent-a');
    const plain = withExperienceMemory(engine).as('agent-a');
    const stored = [...DIRECTIONAL.map((p) => p.stored), ...NEGATABLE.map((p) => p.stored)];
    const paraphrases = [
      ...DIRECTIONAL.map((p) => p.paraphrase),
      ...NEGATABLE.map((p) => p.paraphrase),
    ];
    const swapped = DIRECTIONAL.map((p) => p.swapped);
    const negated = NEGATABLE.flatMap((p) => p.negated);
    expect([stored.length, swapped.length, negated.length]).toEqual([23, 15, 24]);
    await storePlans(rich, stored);
    await storePlans(plain, stored);

    // At the default threshold (0.7): the enriched strategy tells them apart…
    expect(await replays(rich, stored)).toBe(23);
    expect(await replays(rich, paraphrases)).toBe(23);
    expect(await replays(rich, swapped)).toBe(0);
    expect(await replays(rich, negated)).toBe(0);
    // …the bag of words replays every swapped query (same words) and every negated one.
    expect(await replays(plain, swapped)).toBe(15);
    expect(await replays(plain, negated)).toBe(24);

    // The margin. Against the plan it was made from, a swapped query scores
    // 5/11 and a negated one 0; the closest any variant gets to any stored
    // plan is 0.6 (a swapped transfer that shares its source account with
    // another stored transfer), so even 0.65 replays none of them.
    for (const [index, query] of swapped.entries()) {
      expect(jaccard(enriched(query), enriched(DIRECTIONAL[index]?.stored ?? ''))).toBe(5 / 11);
    }
    for (const [index, query] of negated.entries()) {
      expect(
        jaccard(enriched(query), enriched(NEGATABLE[Math.floor(index / 3)]?.stored ?? '')),
      ).toBe(0);
    }
    let highest = 0;
    for (const query of [...swapped, ...negated]) {
      const { plan } = await recallPlan(rich, { query, similarityThreshold: 0.01 });
      highest = Math.max(highest, plan?.similarity ?? 0);
    }
    expect(highest).toBe(0.6);
  }, 120_000);
});
