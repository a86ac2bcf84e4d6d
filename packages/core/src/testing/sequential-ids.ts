import type { IdGenerator } from '../ports/id-generator.js';

/**
 * Ids `${prefix}000001`, `${prefix}000002`, … — sortable and predictable, so
 * tests can assert exact ids and tie-break orders.
 */
export function createSequentialIds(prefix = 'id-'): IdGenerator & { readonly issued: number } {
  let next = 0;
  const generate = () => {
    next += 1;
    return `${prefix}${String(next).padStart(6, '0')}`;
  };
  return Object.defineProperty(generate, 'issued', { get: () => next }) as IdGenerator & {
    readonly issued: number;
  };
}
