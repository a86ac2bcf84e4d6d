import type { PreTrainedTokenizer, Tensor } from '@huggingface/transformers';
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
    endCutTexts(features.tokenizer, texts, inputs);
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

/** One text encoded, not cut (the tokenizer's output with `return_tensor: false`). */
interface Encoded {
  readonly input_ids: readonly number[];
  readonly token_type_ids?: readonly number[];
}

/**
 * Ends each text cut short with the special tokens that end it whole (BERT's
 * `[SEP]`, RoBERTa's `</s>`, a decoder's EOS), as the tokenizers of Python
 * (and so sentence-transformers) truncate: they cut the text's own tokens so
 * that the special ones fit, where transformers.js cuts them off with the
 * rest, so that a `last_token` pooling read a word and other poolings
 * differed from the model's reference. A cut text fills its batch's width
 * without padding, so only those rows are encoded again, whole, to tell.
 */
function endCutTexts(
  tokenizer: PreTrainedTokenizer,
  texts: readonly string[],
  inputs: { input_ids: Tensor; attention_mask: Tensor; token_type_ids?: Tensor },
): void {
  const [rows = 0, width = 0] = inputs.input_ids.dims;
  const ids = inputs.input_ids.data as BigInt64Array;
  const mask = inputs.attention_mask.data as BigInt64Array;
  const types = inputs.token_type_ids?.data as BigInt64Array | undefined;
  for (let row = 0; row < rows; row += 1) {
    // Padded, on either side: not cut.
    if (mask[row * width] === 0n || mask[row * width + width - 1] === 0n) continue;
    const text = texts[row] as string;
    const whole = tokenizer(text, { return_tensor: false }) as unknown as Encoded;
    if (whole.input_ids.length <= width) continue;
    const own = (
      tokenizer(text, { add_special_tokens: false, return_tensor: false }) as unknown as Encoded
    ).input_ids;
    const after = endOf(whole.input_ids, own);
    if (after === null) continue;
    const ending = whole.input_ids.length - after;
    for (let i = 0; i < ending && i < width; i += 1) {
      const at = row * width + width - ending + i;
      ids[at] = BigInt(whole.input_ids[after + i] as number);
      if (types !== undefined) types[at] = BigInt(whole.token_type_ids?.[after + i] ?? 0);
    }
  }
}

/**
 * Where the special tokens that end `whole` start: after the first place
 * it holds `own` (the text's tokens without special ones, which only a few
 * special ones precede); null when it does not hold them.
 */
function endOf(whole: readonly number[], own: readonly number[]): number | null {
  for (let start = 0; start + own.length <= whole.length; start += 1) {
    if (own.every((id, i) => whole[start + i] === id)) return start + own.length;
  }
  return null;
}
