import { MnemoError } from '@mnemo/core';

/** What a response is checked against. */
export interface Expected {
  readonly count: number;
  readonly dimensions: number;
  readonly model: string;
  readonly safeURL: string;
}

function malformed(expected: Expected, problem: string): MnemoError {
  return new MnemoError(
    'EMBEDDER_FAILED',
    `embeddings response from ${expected.safeURL} ${problem}`,
    {
      details: { url: expected.safeURL },
    },
  );
}

/**
 * The vectors of a `/v1/embeddings` body, ordered by their `index` (position
 * when a server omits it). `EMBEDDER_FAILED` for a body of the wrong shape or
 * count or a value that is not a finite 32-bit float, `DIMENSION_MISMATCH` for a
 * vector of the wrong length.
 */
export function parseEmbeddings(body: unknown, expected: Expected): Float32Array[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw malformed(expected, 'has no "data" array');
  if (data.length !== expected.count) {
    throw malformed(expected, `has ${data.length} embeddings for ${expected.count} texts`);
  }
  const vectors: (Float32Array | undefined)[] = new Array(expected.count);
  for (const [position, item] of data.entries()) {
    const entry = item as { index?: unknown; embedding?: unknown } | null;
    const index = entry?.index ?? position;
    if (
      typeof index !== 'number' ||
      !Number.isInteger(index) ||
      index < 0 ||
      index >= data.length
    ) {
      throw malformed(expected, `has an embedding with index ${JSON.stringify(index)}`);
    }
    if (vectors[index] !== undefined) {
      throw malformed(expected, `has two embeddings with index ${index}`);
    }
    const embedding = entry?.embedding;
    if (!Array.isArray(embedding) || !embedding.every((value) => typeof value === 'number')) {
      throw malformed(
        expected,
        `has an embedding (index ${index}) that is not an array of numbers`,
      );
    }
    if (embedding.length !== expected.dimensions) {
      throw new MnemoError(
        'DIMENSION_MISMATCH',
        `model "${expected.model}" returned a ${embedding.length}-dimensional vector, expected ${expected.dimensions} (options.dimensions)`,
        { details: { expected: expected.dimensions, actual: embedding.length } },
      );
    }
    const vector = Float32Array.from(embedding);
    // 1e39 is a JSON number, and Infinity once stored as a 32-bit float.
    if (!vector.every(Number.isFinite)) {
      throw malformed(
        expected,
        `has an embedding (index ${index}) with a value beyond the 32-bit float range`,
      );
    }
    vectors[index] = vector;
  }
  return vectors as Float32Array[];
}
