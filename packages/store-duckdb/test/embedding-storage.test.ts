import { createEngine } from '@mnemo/core';
import { createHashEmbedder, createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';
import { BEFORE_EMBEDDING_NORMS, queryFile, runOnFile } from './raw-file.js';
import { useTempFolder } from './temp-folder.js';

const { file, cleanup } = useTempFolder('mnemo-duckdb-embeddings-');

function open(path: string, vectorDimensions?: number) {
  const store = createDuckDBStore({ path, vectorDimensions });
  cleanup.push(() => store.close());
  const engine = createEngine({
    store,
    embedder: createHashEmbedder({ dimensions: 64 }),
    clock: createManualClock('2026-01-01T00:00:00.000Z'),
    ids: createSequentialIds(),
  });
  return { store, engine };
}

/** How the embedding column's segments are compressed, as saved in the file. */
async function embeddingCompression(path: string): Promise<string[]> {
  const rows = await queryFile(
    path,
    `SELECT DISTINCT compression FROM pragma_storage_info('mnemo_records')
     WHERE column_name = 'embedding' ORDER BY compression`,
  );
  return rows.map((row) => String(row.compression));
}

const embeddings = (path: string) =>
  queryFile(path, 'SELECT id, embedding::VARCHAR AS embedding FROM mnemo_records ORDER BY id');

async function fill(path: string, vectorDimensions?: number) {
  const { store, engine } = open(path, vectorDimensions);
  await engine.init();
  await engine
    .as('agent-a')
    .rememberMany(
      Array.from({ length: 3000 }, (_, i) => ({ content: `fact ${i} about topic ${i % 97}` })),
    );
  await store.close();
}

describe('DuckDB embedding storage', () => {
  // Every vector search scans the whole column: decompressing ALP took about 60 of the 150 ms
  // of a semantic recall at 100k records.
  // The hash embedder's vectors are mostly zeros, so DuckDB run-length encodes them (cheap to
  // read); what matters is that no segment is ALP (or ALPRD), which it chose before.
  it.each([
    ['a FLOAT[n] array', 64, ['Constant', 'RLE']],
    ['a FLOAT[n] array the first embedding fixed', undefined, ['Constant', 'RLE']],
  ])('saves embeddings in %s without ALP', async (_kind, vectorDimensions, compressions) => {
    const path = file('m.duckdb');
    await fill(path, vectorDimensions);
    expect(await embeddingCompression(path)).toEqual(compressions);
  });

  it('migrates a file whose embeddings were compressed, keeping every value', async () => {
    const path = file('old.duckdb');
    await fill(path, 64);
    // The file as version 5 left it: embeddings rewritten under DuckDB's defaults.
    await runOnFile(path, [
      ...BEFORE_EMBEDDING_NORMS,
      'UPDATE mnemo_records SET embedding = embedding',
      'DELETE FROM mnemo_migrations WHERE version = 6',
      'CHECKPOINT',
    ]);
    expect(await embeddingCompression(path)).toContain('ALP');
    const before = await embeddings(path);

    const { store, engine } = open(path, 64);
    await engine.init();
    const hits = await engine
      .as('agent-a')
      .recall({ query: 'fact 7 about topic 7', strategy: 'semantic', limit: 3 });
    expect([hits.hits.length, hits.hits[0]?.record.content, hits.hits[0]?.score]).toEqual([
      3,
      'fact 7 about topic 7',
      1,
    ]);
    await store.close();

    expect(await embeddingCompression(path)).toEqual(['Constant', 'RLE']);
    expect(await embeddings(path)).toEqual(before);
    expect(
      await queryFile(path, 'SELECT version, name FROM mnemo_migrations WHERE version = 6'),
    ).toEqual([{ version: 6, name: 'embeddings saved uncompressed' }]);
  });
});
