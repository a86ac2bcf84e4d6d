import { createHash } from 'node:crypto';
import { analyze } from '../analyzer.js';
import type { Embedder } from '../ports/embedder.js';

/** Terms whose hashed feature one embedder remembers. */
const MAX_MEMOIZED_TERMS = 100_000;

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
  // Each term's signed dimension (+(index + 1) or -(index + 1)), memoized: hashing is most of
  // the embedder's cost and vocabularies repeat. Bounded; cleared when full.
  const features = new Map<string, number>();
  const feature = (term: string): number => {
    let signed = features.get(term);
    if (signed === undefined) {
      const digest = createHash('sha256').update(term).digest();
      const index = digest.readUInt32BE(0) % dimensions;
      signed = ((digest[4] as number) & 1 ? 1 : -1) * (index + 1);
      if (features.size >= MAX_MEMOIZED_TERMS) features.clear();
      features.set(term, signed);
    }
    return signed;
  };
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
          const signed = feature(term);
          const index = Math.abs(signed) - 1;
          vector[index] = (vector[index] as number) + Math.sign(signed);
        }
        // Summed in a loop: `Math.hypot(...vector)` spread 384 arguments per text, half the
        // embedder's time. The vectors are unchanged (their bytes are pinned in defaults.test.ts).
        let squares = 0;
        for (const value of vector) squares += value * value;
        const norm = Math.sqrt(squares);
        if (norm > 0)
          for (let i = 0; i < dimensions; i += 1) vector[i] = (vector[i] as number) / norm;
        return vector;
      });
    },
  };
}
