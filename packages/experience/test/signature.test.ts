import { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { compareCodePoints, jaccard, signatureTokens } from '../src/index.js';

describe('signatureTokens', () => {
  it('ignores word order and case', () => {
    expect(signatureTokens('how do I reset my password')).toEqual(['how', 'password', 'reset']);
    expect(signatureTokens('Password reset — how to?')).toEqual(['how', 'password', 'reset']);
    expect(signatureTokens('RESET PASSWORD HOW')).toEqual(['how', 'password', 'reset']);
  });

  it('deduplicates and sorts', () => {
    expect(signatureTokens('zeta alpha zeta beta ALPHA')).toEqual(['alpha', 'beta', 'zeta']);
  });

  it('drops tokens of one or two characters, counted in code points before lowercasing', () => {
    expect(signatureTokens('a an the of to in on')).toEqual(['the']);
    expect(signatureTokens('go up now')).toEqual(['now']);
    // U+0130 lowercases to two code points; the length counts the original one.
    expect(signatureTokens('İx')).toEqual([]);
    expect(signatureTokens('İxy')).toEqual(['i\u0307xy']);
    // Astral letters count as one code point each.
    expect(signatureTokens('𝒜𝒜 𝒜𝒜𝒜')).toEqual(['𝒜𝒜𝒜']);
  });

  it('keeps Unicode letters and digits', () => {
    expect(signatureTokens('Ünïcödé naïve café 42nd')).toEqual([
      '42nd',
      'café',
      'naïve',
      'ünïcödé',
    ]);
    expect(signatureTokens('١٢٣ 東京都 Ελλάδα')).toEqual(['ελλάδα', '١٢٣', '東京都']);
    // Alphabetic, not only letters: Devanagari vowel signs are marks that belong to the word
    // (the virama, which is not Alphabetic, still splits one).
    expect(signatureTokens('हिन्दी में पासवर्ड बदलें')).toEqual(['पासवर', 'बदलें', 'में', 'हिन']);
    // Numeric, not only decimal digits: a superscript two stays in its token.
    expect(signatureTokens('area 5 km² plot')).toEqual(['area', 'km²', 'plot']);
  });

  it('splits on punctuation, underscores, emoji and lone combining marks', () => {
    expect(signatureTokens('reset_password!!!now🚀then')).toEqual([
      'now',
      'password',
      'reset',
      'then',
    ]);
    expect(signatureTokens('foo.bar,baz;qux')).toEqual(['bar', 'baz', 'foo', 'qux']);
    expect(signatureTokens('cafe\u0301s')).toEqual(['cafe']);
    expect(signatureTokens('')).toEqual([]);
    expect(signatureTokens('!!! ?? 🚀')).toEqual([]);
  });

  it('sorts by code point, not by UTF-16 code unit', () => {
    // U+FF21 (Ａ) is above U+1F600's surrogates in UTF-16 order but below it by code point.
    const astral = '\u{1D4D0}\u{1D4D1}\u{1D4D2}';
    expect(signatureTokens(`${astral} ｚｚｚ`)).toEqual(['ｚｚｚ', astral.toLowerCase()]);
    expect(['\u{1F600}aa', '\uFF41aa'].sort(compareCodePoints)).toEqual([
      '\uFF41aa',
      '\u{1F600}aa',
    ]);
    expect(compareCodePoints('abc', 'abc')).toBe(0);
    expect(compareCodePoints('ab', 'abc')).toBe(-1);
  });
});

describe('jaccard', () => {
  it('is 1 for equal sets, 0 for disjoint sets, 0 for two empty sets', () => {
    expect(jaccard(['a', 'b'], ['b', 'a'])).toBe(1);
    expect(jaccard(['a'], ['b'])).toBe(0);
    expect(jaccard([], [])).toBe(0);
    expect(jaccard(['a'], [])).toBe(0);
  });

  it('is |A ∩ B| / |A ∪ B| over sets', () => {
    expect(jaccard(['a', 'b', 'c'], ['b', 'c', 'd'])).toBe(0.5);
    expect(jaccard(['a', 'a', 'b'], ['a'])).toBe(0.5);
    expect(jaccard(['how', 'password', 'reset'], ['password', 'reset'])).toBe(2 / 3);
    expect(jaccard(new Set(['a', 'b']), new Set(['b']).values())).toBe(0.5);
  });

  it('rejects what is not a set of string tokens with INVALID_INPUT naming the argument', () => {
    // A string is iterable (by character), so it used to be compared letter by letter:
    // "listen" and "silent" were identical.
    for (const [a, b, field] of [
      ['listen', ['silent'], 'a'],
      [['listen'], 'silent', 'b'],
      [42, [], 'a'],
      [null, [], 'a'],
      [['a'], undefined, 'b'],
      [['a', 7], ['a'], 'a[1]'],
      [['a'], [Symbol('b')], 'b[0]'],
    ] as const) {
      const error = (() => {
        try {
          return jaccard(a as never, b as never);
        } catch (caught) {
          return caught;
        }
      })();
      expect(MnemoError.isInstance(error) && [error.code, error.details]).toEqual([
        'INVALID_INPUT',
        { field },
      ]);
    }
  });
});
