import { PLAN_SIGNATURE_STRATEGIES, type PlanSignatureStrategy } from '@mnemo/core';
import { enrichedTokens } from './enriched-signature.js';
import { invalid } from './input.js';

const SEPARATOR = /[^\p{Alphabetic}\p{N}]+/u;

/** Compares strings by Unicode code point (the order of their UTF-8 bytes). */
export function compareCodePoints(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const difference = (x.value.codePointAt(0) as number) - (y.value.codePointAt(0) as number);
    if (difference !== 0) return difference;
  }
}

/**
 * The signature of a query under a strategy, as distinct tokens sorted by
 * code point.
 *
 * `default` (SPEC §4): split on every character that is neither Alphabetic
 * nor Numeric, keep tokens of at least 3 code points (counted before
 * lowercasing), lowercase. Word order and case do not matter.
 *
 * `enriched`: filler removed, stems, number and date slots, negation and
 * direction markers; see `enriched-signature.ts`. Its tokens all start with
 * `~`, which no default token contains, so the two never overlap.
 */
export function signatureTokens(
  query: string,
  strategy: PlanSignatureStrategy = 'default',
): string[] {
  if (typeof query !== 'string') throw invalid('query', 'must be a string');
  if (!PLAN_SIGNATURE_STRATEGIES.includes(strategy)) {
    throw invalid('strategy', `must be one of ${PLAN_SIGNATURE_STRATEGIES.join(', ')}`);
  }
  let tokens: Set<string>;
  if (strategy === 'enriched') {
    tokens = enrichedTokens(query);
  } else {
    tokens = new Set<string>();
    for (const token of query.split(SEPARATOR)) {
      if ([...token].length >= 3) tokens.add(token.toLowerCase());
    }
  }
  return [...tokens].sort(compareCodePoints);
}

/** The distinct tokens of `value`; `INVALID_INPUT` unless it is an iterable of strings other than a string. */
function tokenSet(field: string, value: unknown): Set<string> {
  // A string is iterable too, by character: it is a query, not a token set.
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as Partial<Iterable<unknown>>)[Symbol.iterator] !== 'function'
  ) {
    throw invalid(field, 'must be an iterable of string tokens (see signatureTokens)');
  }
  const tokens = new Set<string>();
  let index = 0;
  for (const token of value as Iterable<unknown>) {
    if (typeof token !== 'string') throw invalid(`${field}[${index}]`, 'must be a string');
    tokens.add(token);
    index += 1;
  }
  return tokens;
}

/**
 * |A ∩ B| / |A ∪ B| of two token sets (iterables of strings, such as
 * `signatureTokens` returns); 0 when both are empty. Anything else, a string
 * included, is `INVALID_INPUT`.
 */
export function jaccard(a: Iterable<string>, b: Iterable<string>): number {
  const left = tokenSet('a', a);
  const right = tokenSet('b', b);
  if (left.size === 0 && right.size === 0) return 0;
  let shared = 0;
  for (const token of left) if (right.has(token)) shared += 1;
  return shared / (left.size + right.size - shared);
}
