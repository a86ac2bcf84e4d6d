import { compareByteOrder } from '../byte-order.js';
import type { ScoredRecord } from '../ports/memory-store.js';
import type { MemoryRecord } from '../records.js';

/** The `k` of reciprocal-rank fusion: a result at rank r of a lane adds weight / (k + r). */
export const RRF_K = 60;

export const LANES = ['lexical', 'semantic', 'recency'] as const;
export type Lane = (typeof LANES)[number];

export type LaneWeights = Readonly<Record<Lane, number>>;

export const DEFAULT_LANE_WEIGHTS: LaneWeights = Object.freeze({
  lexical: 1,
  semantic: 1,
  recency: 0.25,
});

/** One lane's view of a result: its 1-based rank and the lane's own score. */
export interface LaneScore {
  rank: number;
  score: number;
}

export interface FusedRecord {
  record: MemoryRecord;
  score: number;
  lanes: Partial<Record<Lane, LaneScore>>;
}

/** By id in byte order, as the stores rank ties. */
const byId = (a: MemoryRecord, b: MemoryRecord) => compareByteOrder(a.id, b.id);

/**
 * Recency lane over the candidates of the other lanes: newest first (ties by
 * id, newest id first). Ranking every visible record by age would let
 * unrelated new records into the results.
 */
export function recencyLane(candidates: readonly MemoryRecord[]): ScoredRecord[] {
  return [...candidates]
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || byId(b, a))
    .map((record) => ({ record, score: record.createdAt.getTime() }));
}

/** Reciprocal-rank fusion; ordered by fused score descending (compared exactly), then id ascending. */
export function fuseLanes(
  lanes: Partial<Record<Lane, readonly ScoredRecord[]>>,
  weights: LaneWeights,
): FusedRecord[] {
  const fused = new Map<string, FusedRecord>();
  for (const lane of LANES) {
    const results = lanes[lane];
    if (results === undefined) continue;
    results.forEach(({ record, score }, index) => {
      const rank = index + 1;
      const entry = fused.get(record.id) ?? { record, score: 0, lanes: {} };
      entry.score += weights[lane] / (RRF_K + rank);
      entry.lanes[lane] = { rank, score };
      fused.set(record.id, entry);
    });
  }
  return [...fused.values()].sort(
    (a, b) => compareScores(b, a, weights) || byId(a.record, b.record),
  );
}

/**
 * Fused scores at most this far apart (relative) are compared as the
 * fractions they stand for. A sum of a few terms is off by a few units in
 * the last place (1e-16 relative), so doubles farther apart are in the
 * fractions' order; and fractions that are equal (1/63 + 0.25/99 and
 * 1/66 + 0.25/77, common among ranks) must tie, to rank by id, though their
 * sums round to different doubles.
 */
const NEAR = 1e-12;

/** The sign of `a`'s fused score less `b`'s, exact. */
function compareScores(a: FusedRecord, b: FusedRecord, weights: LaneWeights): number {
  const difference = a.score - b.score;
  if (Math.abs(difference) > NEAR * Math.max(a.score, b.score)) return difference;
  // Σ w / (k + rank) of a, minus b's: each weight is m · 2^e exactly; all over one denominator.
  const terms: { sign: bigint; m: bigint; e: number; d: bigint }[] = [];
  for (const [entry, sign] of [
    [a, 1n],
    [b, -1n],
  ] as const) {
    for (const lane of LANES) {
      const laneScore = entry.lanes[lane];
      const weight = weights[lane];
      if (laneScore === undefined || weight === 0) continue;
      terms.push({ sign, ...binary(weight), d: BigInt(RRF_K + laneScore.rank) });
    }
  }
  const lowest = Math.min(...terms.map((term) => term.e));
  const denominator = terms.reduce((product, term) => product * term.d, 1n);
  let sum = 0n;
  for (const term of terms) {
    sum += term.sign * (term.m << BigInt(term.e - lowest)) * (denominator / term.d);
  }
  return sum > 0n ? 1 : sum < 0n ? -1 : 0;
}

const bits = new DataView(new ArrayBuffer(8));

/** A finite, non-negative double as m · 2^e, exactly. */
function binary(value: number): { m: bigint; e: number } {
  bits.setFloat64(0, value);
  const high = bits.getUint32(0);
  const exponent = (high >>> 20) & 0x7ff;
  const fraction = (BigInt(high & 0xfffff) << 32n) | BigInt(bits.getUint32(4));
  return exponent === 0
    ? { m: fraction, e: -1074 }
    : { m: fraction | (1n << 52n), e: exponent - 1075 };
}
