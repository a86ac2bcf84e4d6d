import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { roundedCosine } from '../src/scores.js';
import { adminQuery, describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

// The vector cache scores its candidates in JavaScript (`roundedCosine`); every score must be
// the double the SQL full scan computes (`mnemo_cosine`, rounded to 10 decimals, NaN as NULL).

const schema = uniqueSchema('scores');

beforeAll(async () => {
  const store = createPostgresStore({
    connectionString: PG_URL as string,
    schema,
    vector: 'array',
  });
  await store.init();
  await store.close();
});
afterAll(() => dropSchema(schema));

/** A deterministic pseudo-random float32 vector in [-1, 1). */
function vector(seed: number, size: number): number[] {
  let state = seed;
  return Array.from({ length: size }, () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return Math.fround(state / 2 ** 30 - 1);
  });
}

const PAIRS: [number[], number[]][] = [
  [
    [-1, 0],
    [0, -1],
  ], // every product -0: SQL's sum is -0
  [
    [1, 0],
    [0, 1],
  ],
  [
    [0, 0],
    [1, 1],
  ], // a zero norm
  [[], [1]], // no pair at all
  [
    [1, 2, 3],
    [1, 2],
  ], // lengths differ: the dot over the shorter, each norm over its own
  [
    [1, 1],
    [1, 1],
  ],
  [
    [3, 4],
    [4, 3],
  ],
  // Cosines that, times 1e10, are exactly halfway between two integers: rounded to the even
  // one, down (…774.5) and up (…409.5), as PostgreSQL's round(float8) does.
  [
    [1, 0],
    [2003, 612],
  ],
  [
    [1, 0],
    [1419, 106],
  ],
  ...Array.from({ length: 40 }, (_, i): [number[], number[]] => [
    vector(i + 1, 384),
    vector(i + 101, 384),
  ]),
];

describePostgres('roundedCosine', () => {
  it('computes the same double as SQL for every pair, -0 and NULL included', async () => {
    for (const [a, b] of PAIRS) {
      const { rows } = await adminQuery(
        `SELECT nullif(round("${schema}".mnemo_cosine($1::real[], $2::real[]) * 1e10) / 1e10, 'NaN'::float8) AS score`,
        [a, b],
      );
      const sql = rows[0]?.score === null ? null : Number(rows[0]?.score);
      const js = roundedCosine(Float32Array.from(a), Float32Array.from(b));
      expect(
        Object.is(js, sql),
        `${JSON.stringify([a.slice(0, 3), b.slice(0, 3)])}: ${js} vs ${sql}`,
      ).toBe(true);
    }
  });
});
