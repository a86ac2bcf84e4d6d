import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Extractor } from '../src/extractor.js';
import { createTransformersEmbedder } from '../src/index.js';
import { writeTinyModel } from './tiny-model.js';

// Wraps the real loader to count loads and the size of every inference batch.
const loads = vi.hoisted(() => ({ count: 0, batches: [] as number[] }));
vi.mock('../src/extractor.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/extractor.js')>();
  return {
    ...original,
    loadExtractor: async (...args: Parameters<typeof original.loadExtractor>) => {
      loads.count += 1;
      const extractor = await original.loadExtractor(...args);
      const counted = ((texts, options) => {
        loads.batches.push(texts.length);
        return extractor(texts, options);
      }) as Extractor;
      counted.dispose = () => extractor.dispose();
      return counted;
    },
  };
});

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'mnemo-transformers-lifecycle-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('loading', () => {
  it('touches nothing at construction: the folder may appear afterwards', async () => {
    const modelPath = join(root, 'later');
    const embedder = createTransformersEmbedder({ modelPath });
    writeTinyModel(modelPath);
    await embedder.load();
    expect(embedder.dimensions).toBe(4);
    await embedder.close();
  });

  it('loads once for concurrent first calls, and sends batches of maxBatchSize', async () => {
    loads.count = 0;
    loads.batches = [];
    const embedder = createTransformersEmbedder({
      modelPath: writeTinyModel(join(root, 'shared')),
      maxBatchSize: 3,
    });
    const results = await Promise.all([
      embedder.embed(['cat', 'dog', 'tea', 'rain', 'sql']),
      embedder.embed(['snow']),
      embedder.load(),
    ]);
    expect(loads.count).toBe(1);
    // the probe of the load, then 3 + 2 and 1 in either order
    expect(loads.batches[0]).toBe(1);
    expect(loads.batches.slice(1).sort((a, b) => a - b)).toEqual([1, 2, 3]);
    expect(results[0]).toHaveLength(5);
    expect(results[1]).toHaveLength(1);
    await embedder.embed(['bread']);
    expect(loads.count).toBe(1);
    await embedder.close();
  });

  it('never touches the network: fetch is not called while loading and embedding', async () => {
    const fetch = vi.fn(async () => {
      throw new Error('no network in this test');
    });
    // transformers.js keeps its own reference to fetch, taken when it is first imported.
    const { env } = await import('@huggingface/transformers');
    const libraryFetch = env.fetch;
    env.fetch = fetch;
    vi.stubGlobal('fetch', fetch);
    try {
      const embedder = createTransformersEmbedder({
        modelPath: writeTinyModel(join(root, 'offline')),
      });
      expect(await embedder.embed(['cat', 'tea'])).toHaveLength(2);
      await embedder.close();
      expect(fetch).not.toHaveBeenCalled();
    } finally {
      env.fetch = libraryFetch;
      vi.unstubAllGlobals();
    }
  });
});
