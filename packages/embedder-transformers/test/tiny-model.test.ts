import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, MnemoError } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransformersEmbedder, type TransformersEmbedderOptions } from '../src/index.js';
import {
  HIDDEN,
  reference,
  type TinyModelVariant,
  VERY_LARGE_INTEGER,
  VOCAB,
  writeTinyModel,
} from './tiny-model.js';

let root: string;
let modelPath: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'mnemo-transformers-model-'));
  modelPath = writeTinyModel(join(root, 'tiny'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** An embedder on the tiny model, closed after `use`. */
async function withEmbedder<T>(
  options: Partial<TransformersEmbedderOptions>,
  use: (embedder: ReturnType<typeof createTransformersEmbedder>) => Promise<T>,
): Promise<T> {
  const embedder = createTransformersEmbedder({ modelPath, ...options });
  try {
    return await use(embedder);
  } finally {
    await embedder.close();
  }
}

function expectVectors(actual: Float32Array[], expected: number[][], digits = 6): void {
  expect(actual.map((vector) => vector.length)).toEqual(expected.map((vector) => vector.length));
  for (const [i, vector] of actual.entries()) {
    expect(vector).toBeInstanceOf(Float32Array);
    for (const [j, value] of vector.entries())
      expect(value).toBeCloseTo(expected[i]?.[j] ?? NaN, digits);
  }
}

describe('the embedder on a real (tiny) ONNX model in a local folder', () => {
  it('learns its dimensions on load and returns mean-pooled, normalized vectors', async () => {
    await withEmbedder({}, async (embedder) => {
      expect(embedder.dimensions).toBe(0);
      await embedder.load();
      expect(embedder.dimensions).toBe(HIDDEN);
      const texts = ['cat', 'the dog ate bread', 'Postgres backup in the rain'];
      expectVectors(
        await embedder.embed(texts),
        texts.map((text) => reference(text)),
      );
    });
  });

  it('loads on the first embed without an explicit load()', async () => {
    await withEmbedder({}, async (embedder) => {
      expectVectors(await embedder.embed(['coffee or tea']), [reference('coffee or tea')]);
      expect(embedder.dimensions).toBe(HIDDEN);
    });
  });

  it('pools by the first token with pooling cls, and skips normalizing with normalize false', async () => {
    await withEmbedder({ pooling: 'cls' }, async (embedder) => {
      expectVectors(await embedder.embed(['cat dog']), [reference('cat dog', 'cls')]);
    });
    await withEmbedder({ normalize: false }, async (embedder) => {
      expectVectors(await embedder.embed(['cat dog']), [reference('cat dog', 'mean', false)]);
    });
  });

  it('pools each text by its own first or last token, whatever else is in its batch', async () => {
    const texts = ['cat', 'sql snow bread tea'];
    for (const pooling of ['cls', 'last_token'] as const) {
      await withEmbedder({ pooling }, async (embedder) => {
        expectVectors(
          await embedder.embed(texts),
          texts.map((text) => reference(text, pooling)),
        );
      });
    }
  });

  it("pools by each text's own first token when the tokenizer pads on the left", async () => {
    const texts = ['cat', 'sql snow bread tea'];
    const padLeft = writeTinyModel(join(root, 'pad-left'), [], { padLeft: true });
    for (const pooling of ['cls', 'last_token'] as const) {
      const embedder = createTransformersEmbedder({ modelPath: padLeft, pooling });
      try {
        expectVectors(
          await embedder.embed(texts),
          texts.map((text) => reference(text, pooling)),
        );
      } finally {
        await embedder.close();
      }
    }
  });

  it('pools and normalizes a float16 output in float32', async () => {
    const fp16 = writeTinyModel(join(root, 'fp16'), [], { float16: true });
    const texts = ['cat dog', 'the dog ate bread'];
    await withEmbedder({ modelPath: fp16 }, async (embedder) => {
      // float16 keeps about 3 decimal digits of the table
      expectVectors(
        await embedder.embed(texts),
        texts.map((text) => reference(text)),
        3,
      );
    });
    await withEmbedder({ modelPath: fp16, pooling: 'cls', normalize: false }, async (embedder) => {
      const [vector] = await embedder.embed(['cat dog']);
      // 0.1 in float16
      expect(Array.from(vector ?? [])).toEqual([
        0.0999755859375, 0.0999755859375, 0.0999755859375, 0.0999755859375,
      ]);
    });
  });

  it('reads the token vectors of a model whose output is token_embeddings', async () => {
    const renamed = writeTinyModel(join(root, 'token-embeddings'), [], {
      output: 'token_embeddings',
    });
    await withEmbedder({ modelPath: renamed }, async (embedder) => {
      expectVectors(await embedder.embed(['cat dog']), [reference('cat dog')]);
    });
  });

  it("truncates a text to the tokenizer's model_max_length of 128 tokens", async () => {
    const cats = Array.from({ length: 130 }, () => 'cat').join(' ');
    const tail = (word: string) => Array.from({ length: 20 }, () => word).join(' ');
    await withEmbedder({}, async (embedder) => {
      const [alone, sql, rain] = await embedder.embed([
        cats,
        `${cats} ${tail('sql')}`,
        `${cats} ${tail('rain')}`,
      ]);
      // what follows the 128th token changes nothing
      expect(sql).toEqual(alone);
      expect(rain).toEqual(alone);
      expectVectors([alone ?? new Float32Array()], [reference(cats, 'mean', true, 128)]);
    });
  });

  describe("truncates to the model's positions when the tokenizer's limit is a placeholder or missing", () => {
    // 100 words, all different from their neighbours, so that a cut one token off shows
    const words = Array.from({ length: 100 }, (_, i) => VOCAB[4 + (i % 16)]);
    const long = words.join(' ');

    it.each<[string, number | null]>([
      ['VERY_LARGE_INTEGER', VERY_LARGE_INTEGER],
      ['no model_max_length', null],
    ])('with %s in tokenizer_config.json', async (name, modelMaxLength) => {
      const positioned = writeTinyModel(join(root, `positions-${name}`), [], {
        positions: 16,
        modelMaxLength,
      });
      // 16 tokens: [CLS], 14 words and [SEP], as the first 15 words make
      const first = words.slice(0, 15).join(' ');
      await withEmbedder({ modelPath: positioned }, async (embedder) => {
        const [alone, cut, short] = await embedder.embed([long, first, 'cat dog']);
        expect(alone).toEqual(cut);
        expectVectors([alone ?? new Float32Array()], [reference(long, 'mean', true, 16)]);
        // a batch pads to its longest text, cut at 16 tokens as well
        expectVectors([short ?? new Float32Array()], [reference('cat dog')]);
      });
      await withEmbedder({ modelPath: positioned, pooling: 'last_token' }, async (embedder) => {
        expect(await embedder.embed([long])).toEqual(await embedder.embed([first]));
        // The last token of a text cut short is still its [SEP], in a batch padded right.
        expectVectors(await embedder.embed([long, 'cat']), [
          reference(long, 'last_token', true, 16),
          reference('cat', 'last_token'),
        ]);
      });
    });

    it('ends a text cut short with [SEP] in a batch padded on the left too', async () => {
      const positioned = writeTinyModel(join(root, `positions-pad-left`), [], {
        positions: 16,
        modelMaxLength: null,
        padLeft: true,
      });
      await withEmbedder({ modelPath: positioned }, async (embedder) => {
        expectVectors(await embedder.embed(['cat dog', long]), [
          reference('cat dog'),
          reference(long, 'mean', true, 16),
        ]);
      });
    });

    it("keeps the tokenizer's limit when it is below the model's positions", async () => {
      const positioned = writeTinyModel(join(root, 'positions-above'), [], {
        positions: 16,
        modelMaxLength: 8,
      });
      await withEmbedder({ modelPath: positioned }, async (embedder) => {
        const [alone] = await embedder.embed([long]);
        expectVectors([alone ?? new Float32Array()], [reference(long, 'mean', true, 8)]);
      });
    });
  });

  it('splits large calls into batches of maxBatchSize and keeps the order', async () => {
    const texts = ['cat', 'sql', 'snow', 'bread', 'kitten pet', 'unknown words only', 'tea'];
    await withEmbedder({ maxBatchSize: 2 }, async (embedder) => {
      expectVectors(
        await embedder.embed(texts),
        texts.map((text) => reference(text)),
      );
    });
  });

  it('accepts dimensions equal to the output, and fails the load with DIMENSION_MISMATCH otherwise', async () => {
    await withEmbedder({ dimensions: HIDDEN }, async (embedder) => {
      await embedder.load();
      expect(embedder.dimensions).toBe(HIDDEN);
    });
    await withEmbedder({ dimensions: 384 }, async (embedder) => {
      const error = await embedder.embed(['cat']).catch((thrown: unknown) => thrown);
      expect(MnemoError.hasCode(error, 'DIMENSION_MISMATCH')).toBe(true);
      expect((error as MnemoError).message).toBe(
        `model in ${modelPath} outputs 4-dimensional vectors, expected 384 (options.dimensions)`,
      );
      expect((error as MnemoError).details).toEqual({ modelPath, expected: 384, actual: 4 });
    });
  });

  it.each<[string, TinyModelVariant, string]>([
    ['a token row of 4 × 2 values', { row: [HIDDEN, 2] }, '[1, 4, 2]'],
    ['no values in a token row', { row: [0] }, '[1, 0]'],
    ['the batch axis second', { transposed: true }, '[4, 4]'],
  ])('fails the load with EMBEDDER_FAILED for a model with %s', async (name, variant, shape) => {
    const odd = writeTinyModel(join(root, name), [], variant);
    // cls pooling only slices the output, so the odd shape reaches the embedder
    const embedder = createTransformersEmbedder({
      modelPath: odd,
      pooling: 'cls',
      normalize: false,
    });
    const error = await embedder.load().catch((thrown: unknown) => thrown);
    expect(MnemoError.hasCode(error, 'EMBEDDER_FAILED')).toBe(true);
    expect((error as MnemoError).message).toBe(
      `model in ${odd} returned a tensor of shape ${shape} for 1 texts; expected [1, dimensions]`,
    );
    expect((error as MnemoError).details).toEqual({ modelPath: odd });
    expect(embedder.dimensions).toBe(0);
  });

  it('fails an inference with EMBEDDER_FAILED, the library error as cause, and runs the next one', async () => {
    const partial = writeTinyModel(join(root, 'partial'), [], { unknownToModel: 'zebra' });
    await withEmbedder({ modelPath: partial }, async (embedder) => {
      const error = await embedder.embed(['cat', 'zebra']).catch((thrown: unknown) => thrown);
      expect(MnemoError.hasCode(error, 'EMBEDDER_FAILED')).toBe(true);
      const { cause, message, details } = error as MnemoError;
      expect(cause).toBeInstanceOf(Error);
      expect(message).toBe(
        `model in ${partial} failed to embed 2 texts: ${(cause as Error).message}`,
      );
      expect((cause as Error).message).toContain('indices element out of data bounds');
      expect(details).toEqual({ modelPath: partial });
      expectVectors(await embedder.embed(['cat']), [reference('cat')]);
    });
  });

  it('closes idempotently; embed after close is EMBEDDER_FAILED', async () => {
    const embedder = createTransformersEmbedder({ modelPath });
    await embedder.load();
    await Promise.all([embedder.close(), embedder.close()]);
    await embedder.close();
    await expect(embedder.embed(['cat'])).rejects.toMatchObject({
      code: 'EMBEDDER_FAILED',
      message: `the embedder for ${modelPath} is closed`,
    });
    await expect(embedder.load()).rejects.toMatchObject({ code: 'EMBEDDER_FAILED' });
  });

  it('serves an engine on DuckDB: semantic recall ranks records by meaning', async () => {
    const embedder = createTransformersEmbedder({ modelPath });
    const engine = createEngine({
      store: createDuckDBStore({ path: ':memory:' }),
      embedder,
      clock: createManualClock('2026-01-01T00:00:00.000Z'),
      ids: createSequentialIds(),
    });
    await engine.init();
    try {
      const agent = engine.as('agent-a');
      const pets = await agent.remember({ content: 'The cat sleeps on the sofa' });
      const backups = await agent.remember({ content: 'Postgres backup runs nightly' });
      const food = await agent.remember({ content: 'Coffee and tea at lunch' });
      const result = await agent.recall({
        query: 'database backup and a cat',
        strategy: 'semantic',
      });
      expect(result.hits.map((hit) => hit.record.id)).toEqual([backups.id, pets.id, food.id]);
    } finally {
      await engine.close();
      await embedder.close();
    }
  });
});
