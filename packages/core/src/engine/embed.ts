import { MnemoError } from '../errors.js';
import type { Embedder } from '../ports/embedder.js';
import { embeddingProblem } from '../validation.js';

/** Embeds through the port in batches, mapping failures and checking every vector's length. */
export async function embedTexts(
  embedder: Embedder,
  texts: readonly string[],
): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  const batchSize = Math.max(1, embedder.maxBatchSize);
  for (let start = 0; start < texts.length; start += batchSize) {
    const batch = texts.slice(start, start + batchSize);
    let result: Float32Array[];
    try {
      result = await embedder.embed(batch);
    } catch (error) {
      if (MnemoError.isInstance(error)) throw error;
      throw new MnemoError(
        'EMBEDDER_FAILED',
        `embedder failed: ${(error as Error)?.message ?? String(error)}`,
        {
          cause: error,
        },
      );
    }
    if (!Array.isArray(result) || result.length !== batch.length) {
      throw new MnemoError(
        'EMBEDDER_FAILED',
        `embedder returned ${result?.length} vectors for ${batch.length} texts`,
      );
    }
    for (const item of result as unknown[]) {
      const vector = asFloat32Array(item);
      if (vector === null) {
        throw new MnemoError(
          'EMBEDDER_FAILED',
          `embedder returned ${describe(item)} where a Float32Array was expected`,
        );
      }
      if (vector.length !== embedder.dimensions) {
        throw new MnemoError(
          'DIMENSION_MISMATCH',
          `embedder returned a vector of ${vector.length} dimensions, expected ${embedder.dimensions}`,
        );
      }
      const problem = embeddingProblem(vector);
      if (problem !== null) {
        throw new MnemoError('EMBEDDER_FAILED', `embedder returned a vector that ${problem}`);
      }
      vectors.push(vector);
    }
  }
  return vectors;
}

/**
 * `value` if it is a Float32Array; a copy of one made in another realm (a vm
 * context, a sandboxed test runner), which `instanceof` does not know; else null.
 */
function asFloat32Array(value: unknown): Float32Array | null {
  if (value instanceof Float32Array) return value;
  if (
    ArrayBuffer.isView(value) &&
    Object.prototype.toString.call(value) === '[object Float32Array]'
  )
    return Float32Array.from(value as unknown as ArrayLike<number>);
  return null;
}

/** What an embedder returned instead of a vector, for the error: `an Array`, `null`, `a string`. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value !== 'object') return `a ${typeof value}`;
  const name = (value as object).constructor?.name ?? 'Object';
  return `${/^[AEIOU]/.test(name) ? 'an' : 'a'} ${name}`;
}
