/**
 * Scores are rounded to this many decimals before ranking. Databases add a
 * sum in different orders and so differ in the last bits; rounding turns those
 * near-ties into ties, which break by id, so every store ranks the same data
 * the same way (and the same store ranks it the same way every time).
 */
const SCORE_DIGITS = 10;
const SCALE = 10 ** SCORE_DIGITS;

/**
 * How far apart two computations of one rounded score can be: ten times the
 * rounding, absorbing it and the last bits of sums added in another order (or
 * of `ln` against `Math.log`). The pruned lexical search and the lexical
 * cache compare scores against bounds with it.
 */
export const SCORE_MARGIN = 1e-9;

/**
 * `score` rounded to `SCORE_DIGITS` decimals in float8 arithmetic
 * (`round(x · 10¹⁰) / 10¹⁰`). Rounding through `numeric` cost more than the
 * cosine itself at 100k records, and differed from DuckDB in about 3 of a
 * million values. PostgreSQL's `round(float8)` takes a half to the even
 * integer, where DuckDB's `round(x, 10)` takes it away from zero: see
 * `roundedBm25` for the scores that must match DuckDB's on halves too.
 */
export const rounded = (score: string) =>
  `(round((${score}) * 1e${SCORE_DIGITS}) / 1e${SCORE_DIGITS})`;

/**
 * A BM25 score (never negative) rounded to `SCORE_DIGITS` decimals as
 * DuckDB's `round(x, 10)` and its in-memory index round it: a half up
 * (1.96810702045 → 1.9681070205, where `rounded` gives 1.9681070204).
 * `floor(y + 0.5)` is that rounding for every y = x · 10¹⁰ from 0.5 to
 * 2⁵², where adding 0.5 is exact (and below 0.5 it is 0 unless y is the
 * double just under 0.5, a score under 5·10⁻¹¹ that BM25 cannot reach).
 */
export const roundedBm25 = (score: string) =>
  `(floor((${score}) * 1e${SCORE_DIGITS} + 0.5) / 1e${SCORE_DIGITS})`;

/**
 * What `nullif(rounded(mnemo_cosine(a, b)), 'NaN')` returns (see the
 * function in migrations.ts), computed in JavaScript with the same float8
 * operations in the same order, so it is the same double: each float4
 * widened, products summed in array order (PostgreSQL's `sum(float8)` adds
 * one value at a time), the dot product over the pairs `unnest(a, b)` makes
 * of both (the shorter one padded with NULLs), each norm over its own
 * values; NULL when their product is 0; `round` is `rint` (half to even).
 */
export function roundedCosine(a: Float32Array, b: Float32Array): number | null {
  let aa = 0;
  let bb = 0;
  const shared = Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i += 1) aa += (a[i] as number) * (a[i] as number);
  for (let i = 0; i < b.length; i += 1) bb += (b[i] as number) * (b[i] as number);
  // sum() over no rows is NULL, and so is everything computed from it.
  if (shared === 0) return null;
  // sum() starts from the first value, not from +0: products all -0 sum to -0.
  let dot = (a[0] as number) * (b[0] as number);
  for (let i = 1; i < shared; i += 1) dot += (a[i] as number) * (b[i] as number);
  const norms = Math.sqrt(aa) * Math.sqrt(bb);
  if (norms === 0) return null;
  const score = rint((dot / norms) * SCALE) / SCALE;
  return Number.isNaN(score) ? null : score;
}

/** C's `rint` in the default rounding mode: to the nearest integer, halves to even. */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
