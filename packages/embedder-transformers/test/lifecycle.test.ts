import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Extractor } from '../src/extractor.js';
import { createTransformersEmbedder } from '../src/index.js';
import { writeTinyModel } from './tiny-model.js';

// Wraps the real loader to count loads, the size of every inference batch, the
// runs in flight and the sessions released, and to let a test act while a run is on.
const loads = vi.hoisted(() => ({
  count: 0,
  batches: [] as number[],
  events: [] as string[],
  running: 0,
  mostRunning: 0,
  onRun: undefined as (() => void) | undefined,
}));
vi.mock('../src/extractor.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/extractor.js')>();
  return {
    ...original,
    loadExtractor: async (...args: Parameters<typeof original.loadExtractor>) => {
      loads.count += 1;
      const extractor = await original.loadExtractor(...args);
      const counted = (async (texts, options) => {
        loads.batches.push(texts.length);
        loads.events.push(`run ${texts.length}`);
        loads.running += 1;
        loads.mostRunning = Math.max(loads.mostRunning, loads.running);
        loads.onRun?.();
        try {
          return await extractor(texts, options);
        } finally {
          loads.running -= 1;
          loads.events.push(`done ${texts.length}`);
        }
      }) as Extractor;
      counted.dispose = async () => {
        loads.events.push('dispose');
        await extractor.dispose();
      };
      return counted;
    },
  };
});

function reset(): void {
  loads.count = 0;
  loads.batches = [];
  loads.events = [];
  loads.mostRunning = 0;
  loads.onRun = undefined;
}

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
    reset();
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

describe('running and closing', () => {
  it('runs one batch at a time, whoever calls', async () => {
    const embedder = createTransformersEmbedder({
      modelPath: writeTinyModel(join(root, 'serial')),
      maxBatchSize: 1,
    });
    await embedder.load();
    reset();
    const results = await Promise.all([
      embedder.embed(['cat', 'dog']),
      embedder.embed(['tea']),
      embedder.embed(['rain', 'sql']),
    ]);
    expect(results.map((vectors) => vectors.length)).toEqual([2, 1, 2]);
    expect(loads.batches).toEqual([1, 1, 1, 1, 1]);
    expect(loads.mostRunning).toBe(1);
    await embedder.close();
  });

  it('closes once: waits for the running batch, releases the session, and fails the batches left', async () => {
    const modelPath = writeTinyModel(join(root, 'closing'));
    const embedder = createTransformersEmbedder({ modelPath, maxBatchSize: 1 });
    await embedder.load();
    reset();
    const started = new Promise<void>((resolve) => {
      loads.onRun = resolve;
    });
    const embedding = embedder.embed(['cat', 'dog', 'tea']);
    await started;
    await Promise.all([embedder.close(), embedder.close()]);
    await embedder.close();
    await expect(embedding).rejects.toMatchObject({
      code: 'EMBEDDER_FAILED',
      message: `the embedder for ${modelPath} is closed`,
    });
    expect(loads.events).toEqual(['run 1', 'done 1', 'dispose']);
  });

  it('releases the session of a load that fails its probe', async () => {
    const embedder = createTransformersEmbedder({
      modelPath: writeTinyModel(join(root, 'mismatch')),
      dimensions: 384,
    });
    reset();
    await expect(embedder.load()).rejects.toMatchObject({ code: 'DIMENSION_MISMATCH' });
    expect(loads.events).toEqual(['run 1', 'done 1', 'dispose']);
    await embedder.close();
    expect(loads.events).toEqual(['run 1', 'done 1', 'dispose']);
  });

  it('sets the process-wide transformers.js env to local models only', async () => {
    const { env } = await import('@huggingface/transformers');
    const before = { remote: env.allowRemoteModels, local: env.allowLocalModels };
    env.allowRemoteModels = true;
    env.allowLocalModels = false;
    try {
      const embedder = createTransformersEmbedder({
        modelPath: writeTinyModel(join(root, 'env')),
      });
      await embedder.load();
      expect(env.allowRemoteModels).toBe(false);
      expect(env.allowLocalModels).toBe(true);
      await embedder.close();
    } finally {
      env.allowRemoteModels = before.remote;
      env.allowLocalModels = before.local;
    }
  });
});
