import { MnemoError } from '@mnemo/core';
import type { Extractor } from './extractor.js';
import type { ResolvedOptions } from './options.js';

/** The message of whatever was thrown. */
export function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs the model on `texts` (one at a time for `cls` and `last_token`
 * pooling) and splits the `[texts, dimensions]` output into one vector per
 * text. `EMBEDDER_FAILED` when inference fails or the output
 * has another shape or a value that is not finite; `DIMENSION_MISMATCH` when `dimensions` is given and the
 * vectors have another length.
 */
export async function infer(
  extractor: Extractor,
  texts: readonly string[],
  options: ResolvedOptions,
  dimensions: number | undefined,
): Promise<Float32Array[]> {
  if (options.pooling !== 'mean' && texts.length > 1) {
    // transformers.js pools 'cls' and 'last_token' by the first or last position of the padded
    // batch, not of each text's own tokens: a shorter text would get a padding row. Alone, a
    // text has no padding. ('mean' weighs by the attention mask, so it batches safely.)
    const vectors: Float32Array[] = [];
    for (const text of texts)
      vectors.push(...(await infer(extractor, [text], options, dimensions)));
    return vectors;
  }
  const where = `model in ${options.modelPath}`;
  let output: Awaited<ReturnType<Extractor>>;
  try {
    output = await extractor([...texts], {
      pooling: options.pooling,
      normalize: options.normalize,
    });
  } catch (error) {
    throw new MnemoError(
      'EMBEDDER_FAILED',
      `${where} failed to embed ${texts.length} texts: ${reason(error)}`,
      { cause: error, details: { modelPath: options.modelPath } },
    );
  }
  const [rows, width] = output.dims;
  if (output.dims.length !== 2 || rows !== texts.length || width === undefined || width < 1) {
    throw new MnemoError(
      'EMBEDDER_FAILED',
      `${where} returned a tensor of shape [${output.dims.join(', ')}] for ${texts.length} texts; expected [${texts.length}, dimensions]`,
      { details: { modelPath: options.modelPath } },
    );
  }
  if (dimensions !== undefined && width !== dimensions) {
    throw new MnemoError(
      'DIMENSION_MISMATCH',
      `${where} outputs ${width}-dimensional vectors, expected ${dimensions}${options.dimensions === undefined ? '' : ' (options.dimensions)'}`,
      { details: { modelPath: options.modelPath, expected: dimensions, actual: width } },
    );
  }
  const data = Float32Array.from(output.data);
  // An fp16 export can overflow, and normalizing a zero vector divides by 0.
  if (!data.every(Number.isFinite)) {
    throw new MnemoError('EMBEDDER_FAILED', `${where} returned a vector holding NaN or Infinity`, {
      details: { modelPath: options.modelPath },
    });
  }
  return Array.from({ length: rows }, (_, row) => data.slice(row * width, (row + 1) * width));
}
