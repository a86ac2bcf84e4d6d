import { describe, expect, it } from 'vitest';
import { compareByteOrder } from '../src/index.js';

describe('compareByteOrder', () => {
  it('orders strings as their UTF-8 bytes, where JavaScript puts surrogate pairs first', () => {
    const strings = ['😀', 'Ａ', 'z', 'é', '', 'a', 'ab', '\uFFFF', '𐀀', 'Ａa'];
    const byBytes = [...strings].sort((a, b) =>
      Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')),
    );
    expect([...strings].sort(compareByteOrder)).toEqual(byBytes);
    expect(byBytes).toEqual(['', 'a', 'ab', 'z', 'é', 'Ａ', 'Ａa', '\uFFFF', '𐀀', '😀']);
    expect([...strings].sort()).not.toEqual(byBytes);
    expect([compareByteOrder('x', 'x'), Math.sign(compareByteOrder('😀', 'Ａ'))]).toEqual([0, 1]);
  });
});
