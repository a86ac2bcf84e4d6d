import * as crypto from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { parseTokenConfig } from '../src/index.js';

// The registry's comparison is what keeps a token from being guessed a byte at a time:
// watched here through the one function that may compare digests.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof crypto>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

describe('token comparison', () => {
  it('compares the presented digest with every entry in constant time, even after a match', () => {
    const registry = parseTokenConfig({
      tokens: [
        { token: 'first-token-0123456789', agent: 'a' },
        { token: 'second-token-0123456789', agent: 'b' },
        { token: 'third-token-0123456789', agent: 'c' },
      ],
    });
    const compare = vi.mocked(crypto.timingSafeEqual);
    compare.mockClear();
    expect(registry.authenticate('Bearer first-token-0123456789')).toEqual({
      ok: true,
      principal: { agentId: 'a' },
    });
    expect(compare).toHaveBeenCalledTimes(3);
    compare.mockClear();
    expect(registry.authenticate('Bearer no-such-token-0123456789')).toEqual({
      ok: false,
      reason: 'invalid',
    });
    expect(compare).toHaveBeenCalledTimes(3);
  });
});
