import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { createEngine } from '@mnemo/core';
import { cosineReference, createHashEmbedder } from '@mnemo/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

let folder: string | null = null;
afterEach(() => {
  if (folder !== null) rmSync(folder, { recursive: true, force: true });
  folder = null;
});

async function embeddingColumnType(path: string): Promise<string> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  const rows = (
    await connection.runAndReadAll(
      `SELECT data_type FROM information_schema.columns WHERE table_name = 'mnemo_records' AND column_name = 'embedding'`,
    )
  ).getRowObjectsJS();
  connection.closeSync();
  instance.closeSync();
  return rows[0]?.data_type as string;
}

describe('DuckDB FLOAT[n] embeddings (vectorDimensions)', () => {
  it('stores fixed-size arrays, ranks by array_cosine_similarity, and keeps the size on reopen', async () => {
    folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-vec-'));
    const path = join(folder, 'v.duckdb');
    const embedder = createHashEmbedder({ dimensions: 32 });
    const store = createDuckDBStore({ path, vectorDimensions: 32 });
    const engine = createEngine({ store, embedder });
    await engine.init();
    const agent = engine.as('agent-a');
    const texts = [
      'alpine lakes and mountain hiking trails',
      'mountain biking in the alps',
      'sourdough bread',
      'hiking boots for wet trails',
    ];
    const results = await agent.rememberMany(texts.map((content) => ({ content })));
    const vectors = await embedder.embed(texts);
    const [query] = await embedder.embed(['mountain hiking trails']);
    const expected = texts
      .map((content, i) => ({
        content,
        score: cosineReference(query as Float32Array, vectors[i] as Float32Array),
      }))
      .filter((e) => Number.isFinite(e.score))
      .sort((a, b) => b.score - a.score);
    const { hits } = await agent.recall({ query: 'mountain hiking trails', strategy: 'semantic' });
    expect(hits.map((hit) => hit.record.content)).toEqual(expected.map((e) => e.content));
    for (const [i, hit] of hits.entries())
      expect(hit.score).toBeCloseTo(expected[i]?.score as number, 5);
    expect((await agent.get(results[0]?.id as string)).embedding).toEqual(vectors[0]);
    const narrow = createEngine({ store, embedder: createHashEmbedder({ dimensions: 16 }) });
    await expect(narrow.as('agent-a').remember({ content: 'too narrow' })).rejects.toMatchObject({
      code: 'DIMENSION_MISMATCH',
      details: { expected: 32, actual: 16 },
    });
    await expect(
      narrow.as('agent-a').recall({ query: 'hiking', strategy: 'semantic' }),
    ).rejects.toMatchObject({
      code: 'DIMENSION_MISMATCH',
    });
    await engine.close();
    expect(await embeddingColumnType(path)).toBe('FLOAT[32]');

    // Reopened without the option, the file keeps its fixed-size column.
    const reopened = createEngine({ store: createDuckDBStore({ path }), embedder });
    await reopened.init();
    expect(
      (
        await reopened
          .as('agent-a')
          .recall({ query: 'mountain hiking trails', strategy: 'semantic' })
      ).hits,
    ).toHaveLength(hits.length);
    await reopened.close();
  });

  it('rejects a bad size before any I/O', () => {
    for (const vectorDimensions of [0, -1, 1.5, 70_000]) {
      expect(() => createDuckDBStore({ path: ':memory:', vectorDimensions })).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
    }
  });
});
