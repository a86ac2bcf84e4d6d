import { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import {
  createTransformersEmbedder,
  DTYPE_FILES,
  POOLINGS,
  type TransformersEmbedderOptions,
} from '../src/index.js';

const valid: TransformersEmbedderOptions = { modelPath: '/nonexistent/mnemo-test-model' };

function invalid(options: unknown): MnemoError {
  try {
    createTransformersEmbedder(options as TransformersEmbedderOptions);
  } catch (error) {
    if (MnemoError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected INVALID_INPUT');
}

describe('createTransformersEmbedder options', () => {
  it('does no I/O when constructed: a folder that does not exist is fine until load', () => {
    const embedder = createTransformersEmbedder(valid);
    expect(embedder.semantic).toBe(true);
    expect(embedder.maxBatchSize).toBe(32);
    expect(embedder.dimensions).toBe(0);
  });

  it('reports given dimensions and maxBatchSize before loading', () => {
    const embedder = createTransformersEmbedder({ ...valid, dimensions: 384, maxBatchSize: 8 });
    expect(embedder.dimensions).toBe(384);
    expect(embedder.maxBatchSize).toBe(8);
  });

  it('returns [] for no texts without loading', async () => {
    expect(await createTransformersEmbedder(valid).embed([])).toEqual([]);
  });

  it('rejects texts that are not an array of strings with INVALID_INPUT', async () => {
    const embedder = createTransformersEmbedder(valid);
    await expect(embedder.embed([1] as unknown as string[])).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'texts: must be an array of strings',
    });
    await expect(embedder.embed('cat' as unknown as string[])).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'texts: must be an array of strings',
    });
    // A hole, which `every` skips.
    const holey = new Array<string>(3);
    holey[0] = 'cat';
    holey[2] = 'dog';
    await expect(embedder.embed(holey)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'texts: must be an array of strings',
    });
  });

  it.each([
    ['no options', undefined, 'options: modelPath is required', undefined],
    ['null options', null, 'options: modelPath is required', undefined],
    [
      'no modelPath',
      {},
      'options.modelPath: the path of a local model folder is required',
      'modelPath',
    ],
    [
      'a blank modelPath',
      { modelPath: ' ' },
      'options.modelPath: the path of a local model folder is required',
      'modelPath',
    ],
    [
      'zero dimensions',
      { ...valid, dimensions: 0 },
      'options.dimensions: must be an integer ≥ 1',
      'dimensions',
    ],
    [
      'fractional dimensions',
      { ...valid, dimensions: 2.5 },
      'options.dimensions: must be an integer ≥ 1',
      'dimensions',
    ],
    [
      'pooling none',
      { ...valid, pooling: 'none' },
      'options.pooling: must be one of mean, cls, last_token',
      'pooling',
    ],
    [
      'a string normalize',
      { ...valid, normalize: 'yes' },
      'options.normalize: must be a boolean',
      'normalize',
    ],
    [
      'maxBatchSize 0',
      { ...valid, maxBatchSize: 0 },
      'options.maxBatchSize: must be an integer ≥ 1',
      'maxBatchSize',
    ],
    [
      // A misspelt option was ignored: `dimension: 384` checked nothing on load.
      'an option it does not know',
      { ...valid, dimension: 384 },
      'options.dimension: is not a known option',
      'dimension',
    ],
    [
      'an unknown dtype',
      { ...valid, dtype: 'fp64' },
      'options.dtype: must be one of fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4',
      'dtype',
    ],
  ])('rejects %s with INVALID_INPUT', (_, options, message, field) => {
    const error = invalid(options);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toBe(message);
    expect(error.details).toEqual(field === undefined ? {} : { field });
  });

  it('exports the poolings and the file of each dtype', () => {
    expect(POOLINGS).toEqual(['mean', 'cls', 'last_token']);
    expect(DTYPE_FILES).toEqual({
      fp32: 'onnx/model.onnx',
      fp16: 'onnx/model_fp16.onnx',
      q8: 'onnx/model_quantized.onnx',
      int8: 'onnx/model_int8.onnx',
      uint8: 'onnx/model_uint8.onnx',
      q4: 'onnx/model_q4.onnx',
      q4f16: 'onnx/model_q4f16.onnx',
      bnb4: 'onnx/model_bnb4.onnx',
    });
  });
});
