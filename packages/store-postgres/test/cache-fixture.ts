import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine, type Embedder, type Engine, MnemoError } from '@mnemo/core';
import { createPostgresStore } from '../src/index.js';
import { dropSchema, PG_URL, uniqueSchema } from './database.js';

// What the tests of the in-process caches (vector-cache, lexical-cache, cache-loading and
// cache-sweep) share: texts over a small vocabulary, the questions asked of them, a call
// retried across a server restart, and a writer on a new schema.

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

/**
 * A new schema named after `name`, and an engine writing to it (with `embedder`, recalls not
 * audited); `cleanup` gets the steps that close the engine's store and drop the schema.
 */
export async function writerOnNewSchema(
  name: string,
  cleanup: (() => Promise<void>)[],
  embedder?: Embedder,
): Promise<{ schema: string; engine: Engine }> {
  const schema = uniqueSchema(name);
  cleanup.push(() => dropSchema(schema, PG_URL as string));
  const writer = createPostgresStore({
    connectionString: PG_URL as string,
    schema,
    vector: 'array',
  });
  cleanup.push(() => writer.close());
  const engine = createEngine({
    store: writer,
    readAuditing: false,
    ...(embedder && { embedder }),
  });
  await engine.init();
  return { schema, engine };
}
