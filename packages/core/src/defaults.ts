import { randomFillSync } from 'node:crypto';
import type { Clock } from './ports/clock.js';
import type { Embedder } from './ports/embedder.js';
import type { IdGenerator } from './ports/id-generator.js';

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * UUIDv7 ids (RFC 9562): 48-bit Unix milliseconds, then a 12-bit counter that
 * keeps ids strictly increasing within one generator even inside one
 * millisecond, then 62 random bits.
 */
export function createUuidV7Generator(): IdGenerator {
  let lastMs = -1;
  let counter = 0;
  const random = new Uint8Array(8);
  return () => {
    let ms = Date.now();
    if (ms <= lastMs) {
      counter += 1;
      if (counter > 0xfff) {
        lastMs += 1;
        counter = 0;
      }
      ms = lastMs;
    } else {
      lastMs = ms;
      counter = 0;
    }
    randomFillSync(random);
    const hex = ms.toString(16).padStart(12, '0');
    const randA = (0x7000 | counter).toString(16);
    const variant = ((random[0] as number) & 0x3f) | 0x80;
    const tail = [variant, ...random.subarray(1)]
      .map((byte) => byte.toString(16).padStart(2, '0'))
      .join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${randA}-${tail.slice(0, 4)}-${tail.slice(4, 16)}`;
  };
}

/**
 * The default embedder: no vectors. Records are stored without embeddings;
 * lexical recall works, semantic and hybrid recall are `EMBEDDER_NOT_CONFIGURED`.
 */
export const noopEmbedder: Embedder = Object.freeze({
  dimensions: 0,
  semantic: false,
  maxBatchSize: Number.MAX_SAFE_INTEGER,
  embed: async (texts: readonly string[]) => texts.map(() => new Float32Array(0)),
});
