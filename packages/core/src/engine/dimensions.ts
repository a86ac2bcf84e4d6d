import { MnemoError } from '../errors.js';
import type { MemoryStore, NewRecord, StoreTx } from '../ports/memory-store.js';

export function dimensionMismatch(expected: number, actual: number): MnemoError {
  return new MnemoError(
    'DIMENSION_MISMATCH',
    `this store holds ${expected}-dimensional embeddings; got a ${actual}-dimensional vector`,
    { details: { expected, actual } },
  );
}

/**
 * One embedding size per store: the first embedding stored fixes it, and a
 * record with another size is `DIMENSION_MISMATCH` (its transaction rolls back).
 */
export async function checkEmbeddingDimensions(
  tx: StoreTx,
  records: readonly NewRecord[],
): Promise<void> {
  const sizes = [
    ...new Set(
      records.flatMap(({ record }) => (record.embedding === null ? [] : [record.embedding.length])),
    ),
  ];
  const [first] = sizes;
  if (first === undefined) return;
  const size = (await tx.embeddingDimensions()) ?? (await tx.fixEmbeddingDimensions(first));
  const wrong = sizes.find((other) => other !== size);
  if (wrong !== undefined) throw dimensionMismatch(size, wrong);
}

// Once a store has an embedding size it never changes, so it is read once per store.
const fixedSizes = new WeakMap<MemoryStore, number>();

/** The store's embedding size (null before the first embedding), read from the store until it is fixed. */
export async function storeEmbeddingDimensions(store: MemoryStore): Promise<number | null> {
  const known = fixedSizes.get(store);
  if (known !== undefined) return known;
  const size = await store.embeddingDimensions();
  if (size !== null) fixedSizes.set(store, size);
  return size;
}
