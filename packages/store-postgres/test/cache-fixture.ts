import { setTimeout as sleep } from 'node:timers/promises';
import { MnemoError } from '@mnemo/core';

// What the tests of the in-process caches (vector-cache.test.ts, lexical-cache.test.ts) share:
// texts over a small vocabulary, the questions asked of them, and a call retried across a
// server restart.

export const WORDS =
  'dog cat bird fish walk run swim sleep park river tree house garden lake hill road'.split(' ');

export const QUESTIONS = [
  'dog park',
  'cat sleep tree',
  'swim lake river',
  'bird',
  'run road hill house',
];

/** A deterministic pseudo-random sequence in [0, 1). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** `count` texts of 2 to `longest` words each, the same for the same seed. */
export function texts(seed: number, count: number, longest: number): string[] {
  const next = random(seed);
  return Array.from({ length: count }, () =>
    Array.from(
      { length: 2 + Math.floor(next() * (longest - 1)) },
      () => WORDS[Math.floor(next() * WORDS.length)],
    ).join(' '),
  );
}

/**
 * `call`, again while the store is unavailable (a pooled connection the restart closed, a
 * server still recovering), for up to 10 s.
 */
export async function afterRestart<T>(call: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await call();
    } catch (error) {
      const unavailable = MnemoError.isInstance(error) && error.code === 'STORE_UNAVAILABLE';
      if (!unavailable || tries === 50) throw error;
      await sleep(200);
    }
  }
}
