import { createEngine } from '@mnemo/core';
import { bm25Reference } from '@mnemo/core/testing';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { ownPool, type PostgresPool } from '../src/pool.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * An engine over a fresh schema holding, for agent-a, 100 records of "alpha" (the query's
 * common term, once in every record) and `betas` (the records of its rare term); and, for
 * agent-b alone, 5 records that would outscore them all. Read auditing is off, so a recall
 * runs its lexical statements and nothing else.
 */
async function openWith(betas: readonly string[]) {
  const inner = ownPool({ connectionString: PG_URL as string });
  cleanup.push(() => inner.end());
  // Every statement the pool runs: "pruned" for the pruned lexical query, else its first words
  // (the full query it falls back to, or anything else a recall would send).
  const ran: string[] = [];
  const pool: PostgresPool = {
    query: (config, values) => {
      const text = typeof config === 'string' ? config : config.text;
      ran.push(
        text.includes('settled.yes AS settled')
          ? 'pruned'
          : text.trim().split(/\s+/).slice(0, 3).join(' '),
      );
      return inner.query(config, values);
    },
    connect: () => inner.connect(),
    end: () => inner.end(),
  };
  const schema = uniqueSchema('lexical_pruning');
  cleanup.push(() => dropSchema(schema));
  const engine = createEngine({
    // The SQL search's pruned query (the lexical cache has tests of its own).
    store: createPostgresStore({ pool, schema, lexicalIndex: 'sql' }),
    readAuditing: false,
  });
  await engine.init();
  cleanup.push(() => engine.close());
  const a = engine.as('agent-a');
  const visible: { id: string; content: string }[] = [];
  const contents = [...Array.from({ length: 100 }, (_, i) => `alpha n${i}`), ...betas];
  for (const result of await a.rememberMany(contents.map((content) => ({ content })))) {
    visible.push({ id: result.id, content: contents[visible.length] as string });
  }
  await engine
    .as('agent-b')
    .rememberMany(Array.from({ length: 5 }, (_, i) => ({ content: `beta beta beta alpha b${i}` })));
  ran.length = 0;
  return { a, visible, ran };
}

/** 10 records of beta and alpha, of `length` terms each. */
const betasOf = (length: number) =>
  Array.from({ length: 10 }, (_, i) =>
    ['beta', 'alpha', `m${i}`, ...Array.from({ length: length - 3 }, (_, j) => `x${j}`)].join(' '),
  );

/** Recalls "alpha beta" lexically at each limit: the reference's ranking, from the pruned statement alone. */
async function expectPrunedAnswers(
  { a, visible, ran }: Awaited<ReturnType<typeof openWith>>,
  limits: readonly number[],
) {
  for (const limit of limits) {
    ran.length = 0;
    const result = await a.recall({ query: 'alpha beta', strategy: 'lexical', limit });
    const expected = bm25Reference(visible, 'alpha beta').slice(0, limit);
    expect(result.hits.map((hit) => hit.record.id)).toEqual(expected.map((e) => e.id));
    for (const [i, hit] of result.hits.entries()) {
      expect(hit.score).toBeCloseTo(expected[i]?.score as number, 9);
    }
    expect({ limit, ran }).toEqual({ limit, ran: ['pruned'] });
  }
}

describePostgres('lexical recall pruned by the common terms (MaxScore)', () => {
  // The beta records are the candidates: 10 of 3 terms hold 30 postings, no more than half
  // the query terms' 120 (110 alpha, 10 beta), so their own postings are probed; 10 of 20
  // terms hold 200, so the query terms' postings are read once instead.
  it.each([
    ['probing the candidates’ own postings', 3],
    ['reading the query terms’ postings once', 20],
  ])('answers in one statement, exactly, %s', async (_, length) => {
    await expectPrunedAnswers(await openWith(betasOf(length)), [1, 5, 10]);
  });

  it('keeps a candidate whose common terms reach their bound at its own length', async () => {
    // Alpha is in every record once, so each beta record's full score is its partial score
    // plus alpha's bound at its length. At limit 2 the floor is the second record's: a bound
    // taken at any longer length drops it, and the candidates left are too few to settle.
    await expectPrunedAnswers(
      await openWith(['beta alpha', 'beta alpha y', 'beta alpha y z', 'beta alpha y z w']),
      [2, 3],
    );
  });

  it('bounds a candidate longer than 4,096 terms by the longest length it computes', async () => {
    // Lengths from 3 to 4,202: the common term's bounds are computed for 4,096 of them, and the
    // longest record takes the last one's (higher than its own, so it is never dropped wrongly).
    const long = ['beta', 'alpha', ...Array.from({ length: 4200 }, (_, i) => `w${i}`)].join(' ');
    await expectPrunedAnswers(await openWith([...betasOf(3), long]), [1, 10, 11]);
  });
});
