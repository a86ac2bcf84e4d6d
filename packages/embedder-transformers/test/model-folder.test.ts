import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MnemoError } from '@mnemo/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTransformersEmbedder } from '../src/index.js';
import { writeTinyModel } from './tiny-model.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mnemo-transformers-folder-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

async function failure(promise: Promise<unknown>): Promise<MnemoError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!MnemoError.isInstance(error)) throw new Error(`expected a MnemoError, got ${error}`);
  return error;
}

const EXPECTED = 'config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx';

describe('a model folder that is missing or incomplete', () => {
  it('is EMBEDDER_NOT_CONFIGURED when the folder does not exist, naming the path and files', async () => {
    const modelPath = join(root, 'all-MiniLM-L6-v2');
    const error = await failure(createTransformersEmbedder({ modelPath }).embed(['x']));
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model folder ${modelPath} does not exist; it should hold a sentence-embedding model exported to ONNX: ${EXPECTED}`,
    );
    expect((error.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(error.details).toEqual({ modelPath });
  });

  it('resolves a relative modelPath against the working directory', async () => {
    const error = await failure(createTransformersEmbedder({ modelPath: 'no-such-model' }).load());
    expect(error.message).toBe(
      `model folder ${join(process.cwd(), 'no-such-model')} does not exist; it should hold a sentence-embedding model exported to ONNX: ${EXPECTED}`,
    );
  });

  it('names the file of the chosen dtype when the folder is missing or not a folder', async () => {
    const expected =
      'config.json, tokenizer.json, tokenizer_config.json and onnx/model_quantized.onnx';
    const missing = join(root, 'missing');
    const absent = await failure(
      createTransformersEmbedder({ modelPath: missing, dtype: 'q8' }).load(),
    );
    expect(absent.message).toBe(
      `model folder ${missing} does not exist; it should hold a sentence-embedding model exported to ONNX: ${expected}`,
    );
    const file = join(root, 'model.onnx');
    writeFileSync(file, 'x');
    const notFolder = await failure(
      createTransformersEmbedder({ modelPath: file, dtype: 'q8' }).load(),
    );
    expect(notFolder.message).toBe(
      `model path ${file} is not a folder; it should be a folder holding ${expected}`,
    );
    expect(notFolder.details).toEqual({ modelPath: file });
  });

  it('is EMBEDDER_NOT_CONFIGURED when the path is a file', async () => {
    const modelPath = join(root, 'model.onnx');
    writeFileSync(modelPath, 'x');
    const error = await failure(createTransformersEmbedder({ modelPath }).load());
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model path ${modelPath} is not a folder; it should be a folder holding ${EXPECTED}`,
    );
  });

  it('lists every missing file of an empty folder', async () => {
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model folder ${root} is missing config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx; it should hold ${EXPECTED}`,
    );
  });

  it('names config.json when only it is missing', async () => {
    writeTinyModel(root, ['config.json']);
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model folder ${root} is missing config.json; it should hold ${EXPECTED}`,
    );
  });

  it('names the tokenizer files when they are missing', async () => {
    writeTinyModel(root, ['tokenizer.json', 'tokenizer_config.json']);
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.message).toBe(
      `model folder ${root} is missing tokenizer.json, tokenizer_config.json; it should hold ${EXPECTED}`,
    );
  });

  it('names the ONNX file when the folder has config.json but no model', async () => {
    writeTinyModel(root, ['onnx/model.onnx']);
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model folder ${root} is missing onnx/model.onnx; it should hold ${EXPECTED}`,
    );
  });

  it('expects the file of the chosen dtype', async () => {
    writeTinyModel(root);
    const error = await failure(
      createTransformersEmbedder({ modelPath: root, dtype: 'q8' }).load(),
    );
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model folder ${root} is missing onnx/model_quantized.onnx; it should hold config.json, tokenizer.json, tokenizer_config.json and onnx/model_quantized.onnx`,
    );
  });

  it('expects the file of the dtype named in config.json', async () => {
    writeTinyModel(root);
    writeFileSync(
      join(root, 'config.json'),
      JSON.stringify({ model_type: 'bert', 'transformers.js_config': { dtype: 'fp16' } }),
    );
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.message).toBe(
      `model folder ${root} is missing onnx/model_fp16.onnx; it should hold config.json, tokenizer.json, tokenizer_config.json and onnx/model_fp16.onnx`,
    );
  });

  it.each(['[1, 2]', 'null', '42', '"bert"'])(
    'is EMBEDDER_NOT_CONFIGURED when config.json is %s, not a JSON object',
    async (config) => {
      writeTinyModel(root);
      writeFileSync(join(root, 'config.json'), config);
      const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
      expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
      expect(error.message).toBe(
        `model folder ${root} has a config.json that is not a JSON object: not a JSON object`,
      );
      expect(error.details).toEqual({ modelPath: root });
    },
  );

  it('is EMBEDDER_NOT_CONFIGURED, with the parse error as cause, when config.json is not JSON', async () => {
    writeTinyModel(root);
    writeFileSync(join(root, 'config.json'), '{');
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect(error.message).toBe(
      `model folder ${root} has a config.json that is not a JSON object: ${(error.cause as SyntaxError).message}`,
    );
  });

  it('counts a folder where a file should be as missing', async () => {
    writeTinyModel(root, ['onnx/model.onnx']);
    mkdirSync(join(root, 'onnx', 'model.onnx'), { recursive: true });
    const error = await failure(createTransformersEmbedder({ modelPath: root }).load());
    expect(error.code).toBe('EMBEDDER_NOT_CONFIGURED');
    expect(error.message).toBe(
      `model folder ${root} is missing onnx/model.onnx; it should hold ${EXPECTED}`,
    );
  });

  it('is EMBEDDER_FAILED, with the library error as cause, for a corrupt model.onnx', async () => {
    writeTinyModel(root);
    writeFileSync(join(root, 'onnx', 'model.onnx'), 'this is not an ONNX model');
    const error = await failure(createTransformersEmbedder({ modelPath: root }).embed(['cat']));
    expect(error.code).toBe('EMBEDDER_FAILED');
    expect(error.message.startsWith(`could not load the model in ${root} (fp32): `)).toBe(true);
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.message).toContain((error.cause as Error).message);
  });

  it('does not cache a failed load: fixing the folder makes the next call load', async () => {
    const embedder = createTransformersEmbedder({ modelPath: root });
    expect((await failure(embedder.load())).code).toBe('EMBEDDER_NOT_CONFIGURED');
    writeTinyModel(root);
    await embedder.load();
    expect(embedder.dimensions).toBe(4);
    await embedder.close();
  });
});

describe('the weights a folder loads', () => {
  it('loads the file of the dtype option', async () => {
    writeTinyModel(root);
    renameSync(join(root, 'onnx', 'model.onnx'), join(root, 'onnx', 'model_quantized.onnx'));
    const embedder = createTransformersEmbedder({ modelPath: root, dtype: 'q8' });
    await embedder.load();
    expect(embedder.dimensions).toBe(4);
    await embedder.close();
  });

  it('loads the file of the dtype config.json names', async () => {
    writeTinyModel(root);
    renameSync(join(root, 'onnx', 'model.onnx'), join(root, 'onnx', 'model_quantized.onnx'));
    writeFileSync(
      join(root, 'config.json'),
      JSON.stringify({ model_type: 'bert', 'transformers.js_config': { dtype: 'q8' } }),
    );
    const embedder = createTransformersEmbedder({ modelPath: root });
    await embedder.load();
    expect(embedder.dimensions).toBe(4);
    await embedder.close();
  });

  it('prefers the dtype option to the one config.json names', async () => {
    writeTinyModel(root);
    writeFileSync(
      join(root, 'config.json'),
      JSON.stringify({ model_type: 'bert', 'transformers.js_config': { dtype: 'fp16' } }),
    );
    const embedder = createTransformersEmbedder({ modelPath: root, dtype: 'fp32' });
    await embedder.load();
    expect(embedder.dimensions).toBe(4);
    await embedder.close();
  });

  it.each([['fp64'], ['toString'], [{ model: 'q8' }]])(
    'loads fp32 when config.json names %j, which is not a dtype',
    async (dtype) => {
      writeTinyModel(root);
      writeFileSync(
        join(root, 'config.json'),
        JSON.stringify({ model_type: 'bert', 'transformers.js_config': { dtype } }),
      );
      writeFileSync(join(root, 'onnx', 'model_quantized.onnx'), 'not the weights to load');
      const embedder = createTransformersEmbedder({ modelPath: root });
      await embedder.load();
      expect(embedder.dimensions).toBe(4);
      await embedder.close();
    },
  );
});
