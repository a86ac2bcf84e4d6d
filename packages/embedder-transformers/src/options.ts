import { resolve } from 'node:path';
import { MnemoError } from '@mnemo/core';

/** How token vectors become one vector per text. */
export const POOLINGS = ['mean', 'cls', 'last_token'] as const;
/** How token vectors become one vector per text: their mean, the first (`[CLS]`) token's, or the last token's. */
export type Pooling = (typeof POOLINGS)[number];

/** Weight formats a model folder may hold, each in its own file under `onnx/`. */
export const DTYPE_FILES = {
  fp32: 'onnx/model.onnx',
  fp16: 'onnx/model_fp16.onnx',
  q8: 'onnx/model_quantized.onnx',
  int8: 'onnx/model_int8.onnx',
  uint8: 'onnx/model_uint8.onnx',
  q4: 'onnx/model_q4.onnx',
  q4f16: 'onnx/model_q4f16.onnx',
  bnb4: 'onnx/model_bnb4.onnx',
} as const;
/** A weight format: `fp32` is `onnx/model.onnx`, `q8` is `onnx/model_quantized.onnx`, and so on. */
export type Dtype = keyof typeof DTYPE_FILES;

/** Options of `createTransformersEmbedder`. */
export interface TransformersEmbedderOptions {
  /**
   * A folder holding a sentence-embedding model exported to ONNX: `config.json`,
   * `tokenizer.json`, `tokenizer_config.json` and `onnx/model.onnx` (or the file
   * of the chosen `dtype`). Nothing is ever downloaded.
   */
  modelPath: string;
  /**
   * Length of the vectors. Default: what the model outputs, learnt on load
   * (its `hidden_size` for an ordinary encoder). When given, a model with
   * another output length fails to load with `DIMENSION_MISMATCH`.
   */
  dimensions?: number;
  /** Default `mean`, what most sentence-transformers models use. */
  pooling?: Pooling;
  /** Scale every vector to length 1 (default true). */
  normalize?: boolean;
  /** Most texts per inference run (default 32). */
  maxBatchSize?: number;
  /** Which weights to load. Default: `transformers.js_config.dtype` in `config.json`, else `fp32`. */
  dtype?: Dtype;
}

/** Options after validation, defaults applied; `modelPath` made absolute. */
export interface ResolvedOptions {
  readonly modelPath: string;
  readonly dimensions: number | undefined;
  readonly pooling: Pooling;
  readonly normalize: boolean;
  readonly maxBatchSize: number;
  readonly dtype: Dtype | undefined;
}

function invalid(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `options.${field}: ${message}`, { details: { field } });
}

function positiveInteger(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalid(field, 'must be an integer ≥ 1');
  }
  return value;
}

function oneOf<T extends string>(
  field: string,
  value: unknown,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) throw invalid(field, `must be one of ${allowed.join(', ')}`);
  return found;
}

/** The keys of `TransformersEmbedderOptions`: any other is `INVALID_INPUT` (the type keeps the list complete). */
const OPTION_KEYS: ReadonlySet<string> = new Set(
  Object.keys({
    modelPath: true,
    dimensions: true,
    pooling: true,
    normalize: true,
    maxBatchSize: true,
    dtype: true,
  } satisfies Record<keyof TransformersEmbedderOptions, true>),
);

/** Validates the options (`INVALID_INPUT` naming the field) and applies the defaults. Does no I/O. */
export function resolveOptions(options: TransformersEmbedderOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new MnemoError('INVALID_INPUT', 'options: modelPath is required');
  }
  // A misspelt option was ignored (`dimension: 384` checked nothing on load).
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw invalid(key, 'is not a known option');
  }
  if (typeof options.modelPath !== 'string' || options.modelPath.trim().length === 0) {
    throw invalid('modelPath', 'the path of a local model folder is required');
  }
  if (options.normalize !== undefined && typeof options.normalize !== 'boolean') {
    throw invalid('normalize', 'must be a boolean');
  }
  return {
    modelPath: resolve(options.modelPath),
    dimensions: positiveInteger('dimensions', options.dimensions),
    pooling: oneOf('pooling', options.pooling, POOLINGS) ?? 'mean',
    normalize: options.normalize ?? true,
    maxBatchSize: positiveInteger('maxBatchSize', options.maxBatchSize) ?? 32,
    dtype: oneOf('dtype', options.dtype, Object.keys(DTYPE_FILES) as Dtype[]),
  };
}
