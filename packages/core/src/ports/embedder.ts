/**
 * Turns texts into vectors. The engine calls it on `remember` (the content) and
 * on semantic or hybrid `recall` (the query).
 */
export interface Embedder {
  /**
   * Length of every vector `embed` returns. The engine rejects a vector of any
   * other length with `DIMENSION_MISMATCH`. 0 for the no-op embedder.
   */
  readonly dimensions: number;
  /**
   * True when vectors carry meaning, so that cosine similarity is worth
   * ranking by. False for the no-op embedder: the engine then stores no
   * embedding, and `semantic` / `hybrid` recall fail with
   * `EMBEDDER_NOT_CONFIGURED`; `auto` falls back to `lexical`.
   */
  readonly semantic: boolean;
  /** The most texts one `embed` call accepts; the engine splits larger batches. */
  readonly maxBatchSize: number;
  /**
   * One vector per text, in the same order. May be called concurrently.
   * Throwing fails the calling operation with `EMBEDDER_FAILED` (the thrown
   * error as `cause`) before anything is written.
   */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}
