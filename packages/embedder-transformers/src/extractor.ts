import type { Dtype, Pooling } from './options.js';

/** The output of one feature-extraction run: a `[texts, dimensions]` tensor. */
export interface ExtractorOutput {
  readonly dims: readonly number[];
  readonly type: string;
  readonly data: ArrayLike<number>;
  /** A copy converted to another element type (`float32`). */
  to(type: 'float32'): ExtractorOutput;
}

/** The slice of a transformers.js feature-extraction pipeline the embedder uses. */
export interface Extractor {
  (texts: string[], options: { pooling: Pooling; normalize: boolean }): Promise<ExtractorOutput>;
  /** Releases the ONNX session. */
  dispose(): Promise<void>;
}

/**
 * Loads the feature-extraction pipeline of the model in `modelPath` (absolute),
 * local files only. Imports `@huggingface/transformers` on first use, so that
 * importing this package stays cheap, and turns remote models off for the
 * process: nothing can be downloaded.
 */
export async function loadExtractor(modelPath: string, dtype: Dtype): Promise<Extractor> {
  const { env, pipeline } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const extractor = await pipeline('feature-extraction', modelPath, {
    local_files_only: true,
    device: 'cpu',
    dtype,
  });
  return extractor as unknown as Extractor;
}
