import { maxLength } from './max-length.js';
import type { Dtype, Pooling } from './options.js';

/** The output of one feature-extraction run: a `[texts, dimensions]` float32 tensor. */
export interface ExtractorOutput {
  readonly dims: readonly number[];
  readonly data: ArrayLike<number>;
}

/** Runs a model as a transformers.js feature-extraction pipeline does, in float32. */
export interface Extractor {
  (texts: string[], options: { pooling: Pooling; normalize: boolean }): Promise<ExtractorOutput>;
  /** Releases the ONNX session. */
  dispose(): Promise<void>;
}

/**
 * Loads the feature-extraction pipeline of the model in `modelPath` (absolute),
 * local files only, and returns an extractor whose output is float32 whatever
 * the model outputs. Imports `@huggingface/transformers` on first use, so that
 * importing this package stays cheap, and turns remote models off for the
 * process: nothing can be downloaded.
 */
export async function loadExtractor(modelPath: string, dtype: Dtype): Promise<Extractor> {
  const { env, mean_pooling, pipeline } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const features = await pipeline('feature-extraction', modelPath, {
    local_files_only: true,
    device: 'cpu',
    dtype,
  });
  // The tokenizer truncates at its model_max_length only, which some exports set to a placeholder
  // (1e30) or leave out: a text longer than the model's positions would fail the inference.
  const max_length = maxLength(
    features.tokenizer.model_max_length,
    features.model.config as unknown as Readonly<Record<string, unknown>>,
  );
  // The pipeline's own call, but in float32 from the model's output on: the pipeline pools and
  // normalizes a float16 output as it is stored, which where there is no Float16Array (Node 20
  // and 22) is a Uint16Array of raw bits, and so returns wrong vectors for an fp16 export that
  // does not keep float32 outputs.
  const extract = async (
    texts: string[],
    { pooling, normalize }: { pooling: Pooling; normalize: boolean },
  ): Promise<ExtractorOutput> => {
    const inputs = features.tokenizer(texts, {
      padding: true,
      truncation: true,
      ...(max_length === undefined ? {} : { max_length }),
    });
    const outputs = await features.model(inputs);
    const tokens = (outputs.last_hidden_state ?? outputs.logits ?? outputs.token_embeddings).to(
      'float32',
    );
    const pooled =
      pooling === 'mean'
        ? mean_pooling(tokens, inputs.attention_mask)
        : tokens.slice(null, pooling === 'cls' ? 0 : -1);
    return normalize ? pooled.normalize(2, -1) : pooled;
  };
  return Object.assign(extract, { dispose: () => features.dispose() });
}
