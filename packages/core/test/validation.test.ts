import { describe, expect, it } from 'vitest';
import { validateLabel } from '../src/validation.js';

describe('validateLabel', () => {
  it('counts characters as code points: a character beyond U+FFFF is one, not two', () => {
    const emoji = '😀'.repeat(128);
    expect(validateLabel('tags[0]', emoji, 128)).toBe(emoji);
    expect(() => validateLabel('tags[0]', `${emoji}😀`, 128)).toThrow(
      expect.objectContaining({
        code: 'INVALID_INPUT',
        message: 'tags[0]: must be at most 128 characters',
      }),
    );
    expect(() => validateLabel('tags[0]', 'a'.repeat(129), 128)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });
});
