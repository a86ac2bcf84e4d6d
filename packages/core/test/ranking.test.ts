import { describe, expect, it } from 'vitest';
import { DEFAULT_LANE_WEIGHTS, fuseLanes, RRF_K } from '../src/engine/fusion.js';
import type { MemoryRecord } from '../src/records.js';
import { bm25Reference, memoryRecord } from '../src/testing/index.js';

// The constants are written out here rather than imported: the conformance suite's
// expectations are built from the same constants the engine and the stores use, so a
// change to them would pass it unnoticed.

describe('reciprocal-rank fusion', () => {
  const record = (id: string): MemoryRecord => memoryRecord({ id });
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(record) as [
    MemoryRecord,
    MemoryRecord,
    MemoryRecord,
    MemoryRecord,
  ];

  it('uses k = 60 (SPEC) and weights 1, 1 and 0.25 for lexical, semantic and recency', () => {
    expect([RRF_K, DEFAULT_LANE_WEIGHTS]).toEqual([60, { lexical: 1, semantic: 1, recency: 0.25 }]);
    const fused = fuseLanes(
      {
        lexical: [
          { record: a, score: 3 },
          { record: b, score: 2 },
        ],
        semantic: [
          { record: b, score: 0.9 },
          { record: c, score: 0.8 },
        ],
        recency: [
          { record: c, score: 2 },
          { record: a, score: 1 },
        ],
      },
      DEFAULT_LANE_WEIGHTS,
    );
    expect(fused.map((f) => [f.record.id, f.score, f.lanes])).toEqual([
      ['b', 1 / 62 + 1 / 61, { lexical: { rank: 2, score: 2 }, semantic: { rank: 1, score: 0.9 } }],
      ['a', 1 / 61 + 0.25 / 62, { lexical: { rank: 1, score: 3 }, recency: { rank: 2, score: 1 } }],
      [
        'c',
        1 / 62 + 0.25 / 61,
        { semantic: { rank: 2, score: 0.8 }, recency: { rank: 1, score: 2 } },
      ],
    ]);
  });

  it('orders equal fused scores by id in byte order', () => {
    const fused = fuseLanes(
      {
        lexical: [
          { record: d, score: 1 },
          { record: b, score: 1 },
        ],
        semantic: [
          { record: c, score: 1 },
          { record: a, score: 1 },
        ],
      },
      DEFAULT_LANE_WEIGHTS,
    );
    expect(fused.map((f) => [f.record.id, f.score])).toEqual([
      ['c', 1 / 61],
      ['d', 1 / 61],
      ['a', 1 / 62],
      ['b', 1 / 62],
    ]);
  });
});

describe('BM25', () => {
  it('is computed with k1 = 0.9 and b = 0.4', () => {
    // Terms: "apple banana" 2, "apple" 1, "cherry" 1; avgdl 4/3; "apple" in 2 of 3.
    const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
    const score = (length: number) => (idf * 1.9) / (1 + 0.9 * (0.6 + (0.4 * length) / (4 / 3)));
    const scores = bm25Reference(
      [
        { id: 'd1', content: 'apple banana' },
        { id: 'd2', content: 'apple' },
        { id: 'd3', content: 'cherry' },
      ],
      'apple',
    );
    // Rounded to 10 decimals, as the stores round them.
    const rounded = (x: number) => Math.round(x * 1e10) / 1e10;
    expect(scores).toEqual([
      { id: 'd2', score: rounded(score(1)) },
      { id: 'd1', score: rounded(score(2)) },
    ]);
  });
});

describe('reciprocal-rank fusion of equal scores', () => {
  it('ranks scores equal as fractions by id, whatever the last bit of their sums', () => {
    // x: semantic 3, recency 39 (1/63 + 0.25/99); y: semantic 6, recency 17 (1/66 + 0.25/77):
    // both 459/24948, but the sums round to …396 and …400.
    const lane = (ids: Record<number, string>, size: number) =>
      Array.from({ length: size }, (_, i) => ({
        record: memoryRecord({ id: ids[i + 1] ?? `filler-${i}` }),
        score: 0,
      }));
    const fused = fuseLanes(
      { semantic: lane({ 3: 'x', 6: 'y' }, 6), recency: lane({ 39: 'x', 17: 'y' }, 40) },
      DEFAULT_LANE_WEIGHTS,
    );
    expect(1 / 63 + 0.25 / 99).not.toBe(1 / 66 + 0.25 / 77);
    const ranked = fused.map((f) => f.record.id).filter((id) => id === 'x' || id === 'y');
    expect(ranked).toEqual(['x', 'y']);
  });
});
