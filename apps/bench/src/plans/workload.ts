/**
 * The synthetic plan workload of `bench plans`: signatures of 3–20 distinct
 * tokens drawn from a Zipf vocabulary (rank r has weight 1/r), from a seeded
 * generator, so every run on every store sees the same plans and queries.
 */

/** mulberry32: a small, fast, seeded generator of floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The token of vocabulary rank `rank` (0-based): 3+ letters and digits, so `signatureTokens` keeps it. */
export function token(rank: number): string {
  return `w${rank.toString(36).padStart(3, '0')}`;
}

/** Draws vocabulary ranks with probability ∝ 1/(rank + 1)^exponent. */
export class ZipfSampler {
  private readonly cdf: Float64Array;

  constructor(
    readonly size: number,
    private readonly random: () => number,
    exponent = 1,
  ) {
    this.cdf = new Float64Array(size);
    let total = 0;
    for (let r = 0; r < size; r += 1) {
      total += 1 / (r + 1) ** exponent;
      this.cdf[r] = total;
    }
    for (let r = 0; r < size; r += 1)
      (this.cdf as Float64Array)[r] = (this.cdf[r] as number) / total;
  }

  next(): number {
    const u = this.random();
    let low = 0;
    let high = this.size - 1;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((this.cdf[mid] as number) < u) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** A signature of `count` distinct tokens. */
export function drawSignature(sampler: ZipfSampler, count: number): string[] {
  const tokens = new Set<string>();
  while (tokens.size < count) tokens.add(token(sampler.next()));
  return [...tokens];
}

export interface PlanSpec {
  /** The plan's query: its tokens joined by spaces (their signature is exactly these tokens). */
  query: string;
  outcomeScore: number;
}

export interface PlanWorkload {
  plans: PlanSpec[];
  /** Query texts: paraphrases of stored plans (one token changed, added or dropped, or none) and unrelated signatures. */
  queries: string[];
}

export const VOCABULARY = 50_000;
export const MIN_TOKENS = 3;
export const MAX_TOKENS = 20;

/**
 * `plans` plans and `queries` queries from `seed`. Three queries in four
 * start from a random stored plan and change at most one token (so most are
 * hits at similarity ≥ 0.7); the rest are fresh signatures (mostly misses).
 */
export function makePlanWorkload(plans: number, queries: number, seed: number): PlanWorkload {
  const random = seededRandom(seed);
  const sampler = new ZipfSampler(VOCABULARY, random);
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const signatures: string[][] = [];
  const specs: PlanSpec[] = [];
  for (let i = 0; i < plans; i += 1) {
    const signature = drawSignature(sampler, int(MIN_TOKENS, MAX_TOKENS));
    signatures.push(signature);
    // Scores in [0.5, 1] in steps of 0.05, so ties on similarity are broken by score and age.
    specs.push({ query: signature.join(' '), outcomeScore: 0.5 + int(0, 10) * 0.05 });
  }
  const texts: string[] = [];
  for (let q = 0; q < queries; q += 1) {
    if (random() < 0.25 || signatures.length === 0) {
      texts.push(drawSignature(sampler, int(MIN_TOKENS, MAX_TOKENS)).join(' '));
      continue;
    }
    const tokens = [...(signatures[int(0, signatures.length - 1)] as string[])];
    const change = int(0, 3);
    if (change === 1) tokens[int(0, tokens.length - 1)] = token(sampler.next());
    if (change === 2) tokens.push(token(sampler.next()));
    if (change === 3 && tokens.length > MIN_TOKENS) tokens.splice(int(0, tokens.length - 1), 1);
    texts.push(tokens.reverse().join(' '));
  }
  return { plans: specs, queries: texts };
}
