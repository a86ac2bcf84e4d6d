import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../src/index.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth, drops undefined members and has no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: null, y: 'x' }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":"x","z":null}]},"b":1}',
    );
  });

  it('writes -0 as 0, Dates as ISO strings, and escapes strings as JSON does', () => {
    expect(canonicalJson([-0, 1.5e-7, new Date('2026-01-02T03:04:05.006Z'), 'a"\n\u2028'])).toBe(
      '[0,1.5e-7,"2026-01-02T03:04:05.006Z","a\\"\\n\u2028"]',
    );
  });

  it('refuses what has no canonical form', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(TypeError);
    expect(() => canonicalJson(1n)).toThrow(TypeError);
    const holey = new Array<number>(3);
    holey[0] = 1;
    holey[2] = 2;
    expect(() => canonicalJson(holey)).toThrow(TypeError);
  });

  it('hashes UTF-8 with SHA-256', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });
});
