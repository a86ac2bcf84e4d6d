import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, loadTokenConfig, parseTokenConfig } from '../src/index.js';
import { tempDir } from './fixture.js';

const TOKEN = 'a-long-enough-token-123';

function message(value: unknown): string {
  try {
    parseTokenConfig(value);
  } catch (error) {
    expect(MnemoError.hasCode(error, 'INVALID_INPUT')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected parseTokenConfig to throw');
}

describe('token files', () => {
  it('authenticates plain and hashed tokens, and tells a missing token from a wrong one', () => {
    const registry = parseTokenConfig({
      tokens: [
        { token: TOKEN, agent: 'agent-a', org: 'acme' },
        {
          token_sha256: createHash('sha256')
            .update('another-token-456789')
            .digest('hex')
            .toUpperCase(),
          agent: 'agent-b',
        },
      ],
    });
    expect(registry.size).toBe(2);
    expect(registry.authenticate(`Bearer ${TOKEN}`)).toEqual({
      ok: true,
      principal: { agentId: 'agent-a', orgId: 'acme' },
    });
    expect(registry.authenticate('bearer   another-token-456789 ')).toEqual({
      ok: true,
      principal: { agentId: 'agent-b' },
    });
    expect(registry.authenticate(undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(registry.authenticate('')).toEqual({ ok: false, reason: 'missing' });
    expect(registry.authenticate(`Basic ${TOKEN}`)).toEqual({ ok: false, reason: 'missing' });
    expect(registry.authenticate(`Bearer ${TOKEN} extra`)).toEqual({
      ok: false,
      reason: 'missing',
    });
    expect(registry.authenticate(`Bearer ${TOKEN.slice(0, -1)}`)).toEqual({
      ok: false,
      reason: 'invalid',
    });
    expect(registry.authenticate(`Bearer ${TOKEN.toUpperCase()}`)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  it('rejects malformed files with a message naming the entry, never the token', () => {
    expect(message([])).toBe('tokens file: must be a JSON object { "tokens": [...] }');
    expect(message({ tokens: [] })).toBe(
      'tokens: must be a non-empty array of { token | token_sha256, agent, org? }',
    );
    expect(message({ tokens: [], extra: 1 })).toBe('tokens file.extra: is not a known key');
    expect(message({ tokens: [{ agent: 'a' }] })).toBe(
      'tokens[0]: give exactly one of token or token_sha256',
    );
    for (const token of ['short', 'sixteen chars ok', 'clé-secrète-ünïcødé-0123']) {
      expect(message({ tokens: [{ token, agent: 'a' }] })).toBe(
        'tokens[0].token: must be at least 16 printable ASCII characters without spaces',
      );
    }
    // Both at once is ambiguous (which one is the secret?), not a token plus a spare digest.
    expect(
      message({
        tokens: [
          {
            token: TOKEN,
            token_sha256: createHash('sha256').update(TOKEN).digest('hex'),
            agent: 'a',
          },
        ],
      }),
    ).toBe('tokens[0]: give exactly one of token or token_sha256');
    expect(message({ tokens: [{ token: 'fifteen-chars-x', agent: 'a' }] })).toBe(
      'tokens[0].token: must be at least 16 printable ASCII characters without spaces',
    );
    expect(message({ tokens: [{ token_sha256: 'abc', agent: 'a' }] })).toBe(
      'tokens[0].token_sha256: must be 64 hex digits (the SHA-256 of the token)',
    );
    expect(message({ tokens: [{ token: TOKEN, agent: 'not valid' }] })).toBe(
      'tokens[0].agent: must be 1-256 characters of A-Z a-z 0-9 . _ -',
    );
    expect(message({ tokens: [{ token: TOKEN, agent: 'a', org: '' }] })).toBe(
      'tokens[0].org: must be 1-256 characters of A-Z a-z 0-9 . _ -',
    );
    expect(message({ tokens: [{ token: TOKEN, agent: 'a', agent_id: 'b' }] })).toBe(
      'tokens[0].agent_id: is not a known key',
    );
    const duplicate = message({
      tokens: [
        { token: TOKEN, agent: 'a' },
        { token_sha256: createHash('sha256').update(TOKEN).digest('hex'), agent: 'b' },
      ],
    });
    expect(duplicate).toBe('tokens[1]: repeats the token of tokens[0]');
    expect(duplicate).not.toContain(TOKEN);
  });

  it('accepts a token of exactly 16 printable characters', () => {
    const registry = parseTokenConfig({ tokens: [{ token: 'sixteen-chars-ok', agent: 'a' }] });
    expect(registry.authenticate('Bearer sixteen-chars-ok')).toEqual({
      ok: true,
      principal: { agentId: 'a' },
    });
  });

  it('loads a file, and reports an unreadable or non-JSON one', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'ok.json'), JSON.stringify({ tokens: [{ token: TOKEN, agent: 'a' }] }));
    writeFileSync(join(dir, 'bad.json'), '{ tokens: ');
    expect((await loadTokenConfig(join(dir, 'ok.json'))).size).toBe(1);
    await expect(loadTokenConfig(join(dir, 'bad.json'))).rejects.toThrow(
      `tokens file ${join(dir, 'bad.json')}: is not valid JSON`,
    );
    await expect(loadTokenConfig(join(dir, 'none.json'))).rejects.toThrow(
      `tokens file ${join(dir, 'none.json')}: cannot be read`,
    );
  });

  it('knows which hosts are loopback', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', 'LOCALHOST', '::1', '[::1]']) {
      expect([host, isLoopbackHost(host)]).toEqual([host, true]);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '127.example.com', '']) {
      expect([host, isLoopbackHost(host)]).toEqual([host, false]);
    }
  });
});
