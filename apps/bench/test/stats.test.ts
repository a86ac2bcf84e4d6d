import { describe, expect, it } from 'vitest';
import { mean, median, percentile, ratio, round } from '../src/shared/stats.js';

describe('stats', () => {
  it('percentiles interpolate linearly between closest ranks', () => {
    const values = [5, 1, 4, 2, 3]; // sorted 1..5
    expect(percentile(values, 0)).toBe(1);
    expect(percentile(values, 50)).toBe(3);
    expect(percentile(values, 95)).toBe(4.8);
    expect(percentile(values, 100)).toBe(5);
    expect(percentile([7], 95)).toBe(7);
    expect(() => percentile([], 50)).toThrow(RangeError);
  });

  it('median, mean, round, ratio', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([3, 1, 2])).toBe(2);
    expect(mean([1, 2, 6])).toBe(3);
    expect(mean([])).toBe(0);
    expect(round(0.123456, 4)).toBe(0.1235);
    expect(round(-1.5, 0)).toBe(-2);
    expect(round(12.3456, 2)).toBe(12.35);
    expect(round(-0.00001, 4)).toBe(0);
    expect(ratio(0.5, 0.25)).toBe(2);
    expect(ratio(0.5, 0)).toBeNull();
  });
});
