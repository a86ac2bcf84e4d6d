import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ID_PATTERN, MnemoError } from '@mnemo/core';

/** Who a bearer token authenticates as. */
export interface TokenPrincipal {
  readonly agentId: string;
  readonly orgId?: string;
}

/** The outcome of checking an `Authorization` header. */
export type Authentication =
  | { readonly ok: true; readonly principal: TokenPrincipal }
  | { readonly ok: false; readonly reason: 'missing' | 'invalid' };

/** Bearer tokens and the agents they stand for. Holds only the tokens' SHA-256 digests. */
export interface TokenRegistry {
  /** Number of tokens. */
  readonly size: number;
  /**
   * Checks an `Authorization: Bearer <token>` header value. `missing` when there is no
   * bearer token, `invalid` when it matches none. Compares digests in constant time and
   * always against every entry.
   */
  authenticate(header: string | undefined): Authentication;
}

/** Shortest plain token accepted: anything shorter could be guessed. */
export const MIN_TOKEN_LENGTH = 16;

const ENTRY_KEYS = ['token', 'token_sha256', 'agent', 'org'];
const HEX_DIGEST = /^[0-9a-f]{64}$/;
const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

function invalid(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `${field}: ${message}`, { details: { field } });
}

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/**
 * Builds a registry from the token file's JSON:
 * `{ "tokens": [ { "token": "…", "agent": "a", "org": "o" }, { "token_sha256": "<hex>", "agent": "b" } ] }`.
 * Each entry gives the token itself (at least 16 printable ASCII characters) or its SHA-256
 * hex digest, and the agent (and optionally org) it authenticates as. Throws `INVALID_INPUT`
 * naming the bad entry; the message never repeats a token.
 */
export function parseTokenConfig(value: unknown): TokenRegistry {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('tokens file', 'must be a JSON object { "tokens": [...] }');
  }
  for (const key of Object.keys(value)) {
    if (key !== 'tokens') throw invalid(`tokens file.${key}`, 'is not a known key');
  }
  const list = (value as { tokens?: unknown }).tokens;
  if (!Array.isArray(list) || list.length === 0) {
    throw invalid('tokens', 'must be a non-empty array of { token | token_sha256, agent, org? }');
  }
  const entries = list.map((raw: unknown, index) => {
    const where = `tokens[${index}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw invalid(where, 'must be an object');
    }
    const entry = raw as Record<string, unknown>;
    for (const key of Object.keys(entry)) {
      if (!ENTRY_KEYS.includes(key)) throw invalid(`${where}.${key}`, 'is not a known key');
    }
    const { token, token_sha256: hashed, agent, org } = entry;
    if ((token === undefined) === (hashed === undefined)) {
      throw invalid(where, 'give exactly one of token or token_sha256');
    }
    let hash: Buffer;
    if (token !== undefined) {
      // Printable ASCII: what every client sends byte for byte in an Authorization header.
      if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || !/^[!-~]+$/.test(token)) {
        throw invalid(
          `${where}.token`,
          `must be at least ${MIN_TOKEN_LENGTH} printable ASCII characters without spaces`,
        );
      }
      hash = digest(token);
    } else {
      if (typeof hashed !== 'string' || !HEX_DIGEST.test(hashed.toLowerCase())) {
        throw invalid(`${where}.token_sha256`, 'must be 64 hex digits (the SHA-256 of the token)');
      }
      hash = Buffer.from(hashed.toLowerCase(), 'hex');
    }
    if (typeof agent !== 'string' || !ID_PATTERN.test(agent)) {
      throw invalid(`${where}.agent`, 'must be 1-256 characters of A-Z a-z 0-9 . _ -');
    }
    if (org !== undefined && (typeof org !== 'string' || !ID_PATTERN.test(org))) {
      throw invalid(`${where}.org`, 'must be 1-256 characters of A-Z a-z 0-9 . _ -');
    }
    const principal: TokenPrincipal =
      org === undefined ? { agentId: agent } : { agentId: agent, orgId: org as string };
    return { hash, principal: Object.freeze(principal) };
  });
  entries.forEach((entry, index) => {
    const first = entries.findIndex((other) => other.hash.equals(entry.hash));
    if (first !== index) throw invalid(`tokens[${index}]`, `repeats the token of tokens[${first}]`);
  });

  return {
    size: entries.length,
    authenticate(header) {
      const match = header === undefined ? null : BEARER.exec(header);
      if (match === null) return { ok: false, reason: 'missing' };
      const presented = digest(match[1] as string);
      let found: TokenPrincipal | undefined;
      for (const entry of entries) {
        if (timingSafeEqual(entry.hash, presented) && found === undefined) found = entry.principal;
      }
      return found === undefined
        ? { ok: false, reason: 'invalid' }
        : { ok: true, principal: found };
    },
  };
}

/** Reads and parses a token file (see `parseTokenConfig`). */
export async function loadTokenConfig(path: string): Promise<TokenRegistry> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new MnemoError('INVALID_INPUT', `tokens file ${path}: cannot be read`, {
      cause: error,
      details: { field: 'tokens file' },
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new MnemoError('INVALID_INPUT', `tokens file ${path}: is not valid JSON`, {
      cause: error,
      details: { field: 'tokens file' },
    });
  }
  return parseTokenConfig(json);
}
