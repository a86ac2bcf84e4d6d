import type { ResolvedOptions } from './options.js';

/**
 * What a request carries that must never reach a message: the API key, and
 * the extra headers' values of 8 characters or more (a proxy's key; shorter
 * ones are not secrets, and hiding them would garble messages).
 */
export function secretsOf(options: Pick<ResolvedOptions, 'apiKey' | 'headers'>): string[] {
  const headerValues = Object.values(options.headers).filter((value) => value.length >= 8);
  return options.apiKey === undefined ? headerValues : [options.apiKey, ...headerValues];
}

/**
 * `text` with every secret replaced by `[redacted]`, the longest first: a
 * header value holding the key whole would otherwise keep the rest of it.
 */
export function scrub(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length))
    scrubbed = scrubbed.split(secret).join('[redacted]');
  return scrubbed;
}
