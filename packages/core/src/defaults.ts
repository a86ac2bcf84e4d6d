import { randomFillSync } from 'node:crypto';
import type { Clock } from './ports/clock.js';
import type { Embedder } from './ports/embedder.js';
import type { IdGenerator } from './ports/id-generator.js';

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/** Two lowercase hex digits for each byte value. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** Random bytes drawn at once: 512 ids' worth (a draw per id, formatted by `map`, took 2 µs an id; now 0.4). */
const RANDOM_POOL = 4096;

/**
 * UUIDv7 ids (RFC 9562): 48-bit Unix milliseconds, then a 12-bit counter that
 * keeps ids strictly increasing within one generator even inside one
 * millisecond, then 62 random bits (from the CSPRNG, drawn 4 KiB at a time).
 */
export function createUuidV7Generator(): IdGenerator {
  let lastMs = -1;
  let counter = 0;
  const random = new Uint8Array(RANDOM_POOL);
  let used = RANDOM_POOL;
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
    if (used + 8 > RANDOM_POOL) {
      randomFillSync(random);
      used = 0;
    }
    const at = used;
    used += 8;
    const byte = (i: number) => HEX[random[at + i] as number] as string;
    const hex = ms.toString(16).padStart(12, '0');
    const randA = (0x7000 | counter).toString(16);
    const variant = HEX[((random[at] as number) & 0x3f) | 0x80] as string;
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${randA}-${variant}${byte(1)}-${byte(2)}${byte(3)}${byte(4)}${byte(5)}${byte(6)}${byte(7)}`;
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
