import { describe, expect, it } from 'vitest';
import { scrub, secretsOf } from '../src/secrets.js';

describe('scrub', () => {
  it('hides a secret that holds another whole, whatever order they are given in', () => {
    // A proxy header whose value carries the API key and more: hiding the key first left the rest.
    const secrets = secretsOf({
      apiKey: 'sk-abcdefgh',
      headers: { 'x-proxy-auth': 'sk-abcdefgh-proxy-tail', 'x-short': 'abc' },
    });
    expect(scrub('echo sk-abcdefgh-proxy-tail and sk-abcdefgh', secrets)).toBe(
      'echo [redacted] and [redacted]',
    );
  });
});
