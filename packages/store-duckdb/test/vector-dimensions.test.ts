import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { createEngine } from '@mnemo/core';
import { cosineReference, createHashEmbedder } from '@mnemo/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';
import { queryFile, runOnFile } from './raw-file.js';

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

  it('makes the column FLOAT[n] with the first embedding of a store opened without a size', async () => {
    // DuckDB logs every commit that appends lists with the lists appended since the last
    // checkpoint: a FLOAT[] column made each write log all the embeddings before it.
    folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-vec-'));
    const embedder = createHashEmbedder({ dimensions: 32 });
    const open = async (path: string, ids?: () => string) => {
      const store = createDuckDBStore({ path });
      const engine = createEngine({ store, embedder, ...(ids === undefined ? {} : { ids }) });
      await engine.init();
      return { store, engine };
    };
    // A write that rolls back (two records, one id) leaves the list and the size unfixed; the
    // store's next write fixes them.
    const rolledBack = join(folder, 'rolled-back.duckdb');
    const { store, engine: first } = await open(rolledBack, () => 'same-id');
    await expect(
      first.as('agent-a').rememberMany([{ content: 'alpine lakes' }, { content: 'sourdough' }]),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(await store.embeddingDimensions()).toBeNull();
    await first.as('agent-a').remember({ content: 'alpine lakes' });
    expect(await store.embeddingDimensions()).toBe(32);
    await first.close();
    expect(await embeddingColumnType(rolledBack)).toBe('FLOAT[32]');

    const path = join(folder, 'first.duckdb');
    const { engine: second } = await open(path);
    const agent = second.as('agent-a');
    const texts = ['alpine lakes and mountain hiking trails', 'sourdough bread'];
    // Vector searches in flight while the first embeddings commit, on the list or the array.
    const searches = Array.from({ length: 4 }, () =>
      agent.recall({ query: 'mountain hiking', strategy: 'semantic' }),
    );
    const written = await agent.rememberMany(texts.map((content) => ({ content })));
    const found = await Promise.all(searches);
    expect(found.every(({ hits }) => hits.length === 0 || hits.length === 2)).toBe(true);
    const [query] = await embedder.embed(['mountain hiking']);
    const vectors = await embedder.embed(texts);
    const { hits } = await agent.recall({ query: 'mountain hiking', strategy: 'semantic' });
    expect(hits.map((hit) => [hit.record.id, hit.score])).toEqual(
      written
        .map(({ id }, i) => [
          id,
          Number(cosineReference(query as Float32Array, vectors[i] as Float32Array).toFixed(10)),
        ])
        .sort((a, b) => (b[1] as number) - (a[1] as number)),
    );
    await agent.remember({ content: 'hiking boots' });
    await second.close();
    expect(await embeddingColumnType(path)).toBe('FLOAT[32]');
  });

  it('makes the FLOAT[] list of a file written before a FLOAT[n] array when it opens, keeping every value', async () => {
    folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-vec-'));
    const path = join(folder, 'old.duckdb');
    const embedder = createHashEmbedder({ dimensions: 32 });
    const first = createEngine({ store: createDuckDBStore({ path }), embedder });
    await first.init();
    await first
      .as('agent-a')
      .rememberMany(
        ['alpine lakes', 'mountain biking', 'sourdough bread'].map((content) => ({ content })),
      );
    await first.close();
    // The file as earlier versions left it: embeddings in a list.
    const toList = [
      'DROP INDEX mnemo_records_dedup_key',
      'ALTER TABLE mnemo_records ALTER embedding TYPE FLOAT[]',
      'CREATE INDEX mnemo_records_dedup_key ON mnemo_records (dedup_key)',
    ];
    await runOnFile(path, toList);
    expect(await embeddingColumnType(path)).toBe('FLOAT[]');
    const embeddings = () =>
      queryFile(path, 'SELECT id, embedding::FLOAT[] AS embedding FROM mnemo_records ORDER BY id');
    const before = await embeddings();
    expect(before.map((row) => (row.embedding as number[]).length)).toEqual([32, 32, 32]);

    const reopened = createEngine({ store: createDuckDBStore({ path }), embedder });
    await reopened.init();
    const { hits } = await reopened
      .as('agent-a')
      .recall({ query: 'alpine lakes', strategy: 'semantic', limit: 1 });
    expect([hits[0]?.record.content, hits[0]?.score]).toEqual(['alpine lakes', 1]);
    await reopened.close();
    expect(await embeddingColumnType(path)).toBe('FLOAT[32]');
    expect(await embeddings()).toEqual(before);

    // A file edited by hand to hold an embedding of another size keeps its list, and opens.
    await runOnFile(path, [
      ...toList,
      `UPDATE mnemo_records SET embedding = [1, 2, 3] WHERE id = '${before[0]?.id}'`,
    ]);
    const edited = createEngine({ store: createDuckDBStore({ path }), embedder });
    await edited.init();
    expect(
      (await edited.as('agent-a').recall({ query: 'sourdough', strategy: 'lexical' })).hits.map(
        (hit) => hit.record.content,
      ),
    ).toEqual(['sourdough bread']);
    await edited.close();
    expect(await embeddingColumnType(path)).toBe('FLOAT[]');
  });

  it('rejects a bad size before any I/O', () => {
    for (const vectorDimensions of [0, -1, 1.5, 65_536, 70_000]) {
      expect(() => createDuckDBStore({ path: ':memory:', vectorDimensions })).toThrow(
        expect.objectContaining({
          code: 'INVALID_INPUT',
          message: 'vectorDimensions: must be an integer from 1 to 65535',
          details: { field: 'vectorDimensions' },
        }),
      );
    }
    // The bounds themselves are sizes.
    for (const vectorDimensions of [1, 65_535]) {
      expect(() => createDuckDBStore({ path: ':memory:', vectorDimensions })).not.toThrow();
    }
  });
});
