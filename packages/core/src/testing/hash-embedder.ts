import { createHash } from 'node:crypto';
import { analyze } from '../analyzer.js';
import type { Embedder } from '../ports/embedder.js';

export interface HashEmbedderOptions {
  /** Vector length (default 64). */
  dimensions?: number;
  /** Largest batch (default 64). */
  maxBatchSize?: number;
}

/**
 * A deterministic embedder for tests: each analyzed term is hashed to a
 * dimension and a sign (feature hashing), and the sum is L2-normalized. Texts
 * sharing terms get a positive cosine; the same text always gets the same
 * vector, on every machine. Records every call in `calls`.
 */
export function createHashEmbedder(
  options: HashEmbedderOptions = {},
): Embedder & { calls: string[][] } {
  const dimensions = options.dimensions ?? 64;
  const calls: string[][] = [];
  return {
    dimensions,
    semantic: true,
    maxBatchSize: options.maxBatchSize ?? 64,
    calls,
    async embed(texts) {
      calls.push([...texts]);
      return texts.map((text) => {
        const vector = new Float32Array(dimensions);
        for (const term of analyze(text)) {
          const digest = createHash('sha256').update(term).digest();
          const index = digest.readUInt32BE(0) % dimensions;
          vector[index] = (vector[index] ?? 0) + ((digest[4] as number) & 1 ? 1 : -1);
        }
        const norm = Math.hypot(...vector);
        if (norm > 0)
          for (let i = 0; i < dimensions; i += 1) vector[i] = (vector[i] as number) / norm;
        return vector;
      });
    },
  };
}
