import { describe, expect, it } from 'vitest';
import {
  hitAtK,
  meanScores,
  recallAtK,
  reciprocalRank,
  scoreQuestion,
} from '../src/recall/metrics.js';

const ranked = [
  'D1:1',
  'D2:4',
  'D1:7',
  'D3:2',
  'D1:9',
  'D4:1',
  'D4:2',
  'D4:3',
  'D4:4',
  'D4:5',
  'D5:5',
];

describe('recall@k', () => {
  it('is the fraction of gold turns among the first k', () => {
    expect(recallAtK(ranked, ['D1:7', 'D3:2'], 1)).toBe(0);
    expect(recallAtK(ranked, ['D1:7', 'D3:2'], 3)).toBe(0.5);
    expect(recallAtK(ranked, ['D1:7', 'D3:2'], 5)).toBe(1);
    expect(recallAtK(ranked, ['D1:1', 'D9:9', 'D9:8', 'D9:7'], 10)).toBe(0.25);
  });

  it('counts a gold turn once, and nothing past k (the 11th hit does not count at k = 10)', () => {
    expect(recallAtK(['D1:1', 'D1:1'], ['D1:1', 'D1:2'], 5)).toBe(0.5);
    expect(recallAtK(ranked, ['D5:5'], 10)).toBe(0);
    expect(recallAtK(ranked, ['D5:5', 'D5:5'], 11)).toBe(1);
  });

  it('is 0 for an empty ranking and refuses a question without gold turns', () => {
    expect(recallAtK([], ['D1:1'], 10)).toBe(0);
    expect(() => recallAtK(ranked, [], 10)).toThrow(RangeError);
  });
});

describe('hit@k and MRR', () => {
  it('hit@10 is 1 when any gold turn is in the top 10', () => {
    expect(hitAtK(ranked, ['D9:9', 'D4:5'], 10)).toBe(1);
    expect(hitAtK(ranked, ['D5:5'], 10)).toBe(0);
  });

  it('MRR is 1 / rank of the first gold turn, 0 when none is in the top 10', () => {
    expect(reciprocalRank(ranked, ['D1:1'], 10)).toBe(1);
    expect(reciprocalRank(ranked, ['D1:9', 'D3:2'], 10)).toBe(0.25);
    expect(reciprocalRank(ranked, ['D4:5'], 10)).toBe(0.1);
    expect(reciprocalRank(ranked, ['D5:5'], 10)).toBe(0);
  });
});

describe('scores of questions', () => {
  it('scores one question at k = 1, 5, 10', () => {
    expect(scoreQuestion(ranked, ['D2:4', 'D4:4', 'D9:9'])).toEqual({
      recallAt1: 0,
      recallAt5: 1 / 3,
      recallAt10: 2 / 3,
      hitAt10: 1,
      mrr: 0.5,
    });
  });

  it('averages over questions', () => {
    const a = scoreQuestion(ranked, ['D1:1']); // 1, 1, 1, 1, 1
    const b = scoreQuestion(ranked, ['D3:2', 'D4:5']); // 0, 0.5, 1, 1, 0.25
    const c = scoreQuestion([], ['D1:1']); // all 0
    expect(meanScores([a, b, c])).toEqual({
      recallAt1: 1 / 3,
      recallAt5: 0.5,
      recallAt10: 2 / 3,
      hitAt10: 2 / 3,
      mrr: 1.25 / 3,
    });
    expect(meanScores([])).toEqual({
      recallAt1: 0,
      recallAt5: 0,
      recallAt10: 0,
      hitAt10: 0,
      mrr: 0,
    });
  });
});
