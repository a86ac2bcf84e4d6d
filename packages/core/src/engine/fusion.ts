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

/** Reciprocal-rank fusion; ordered by fused score descending, then id ascending. */
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
  return [...fused.values()].sort((a, b) => b.score - a.score || byId(a.record, b.record));
}
