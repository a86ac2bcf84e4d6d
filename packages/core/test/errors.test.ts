import { describe, expect, it } from 'vitest';
import { MnemoError } from '../src/index.js';

describe('MnemoError.hasCode', () => {
  it('tells one code from another, and narrows `code` to the one asked for', () => {
    const error: unknown = new MnemoError('NOT_FOUND', 'record x not found');
    expect(MnemoError.hasCode(error, 'INVALID_INPUT')).toBe(false);
    expect(MnemoError.hasCode(new Error('NOT_FOUND'), 'NOT_FOUND')).toBe(false);
    if (!MnemoError.hasCode(error, 'NOT_FOUND')) throw new Error('expected NOT_FOUND');
    // Compiles only because hasCode narrowed the code (the typecheck checks this file).
    const code: 'NOT_FOUND' = error.code;
    expect(code).toBe('NOT_FOUND');
  });
});
