import { createEngine } from '@mnemo/core';
import { cosineReference, createHashEmbedder } from '@mnemo/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { dropSchema, PGVECTOR_URL, queryOn, uniqueSchema } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

if (PGVECTOR_URL === undefined) {
  if (process.env.CI)
    console.warn('\n  MNEMO_TEST_PGVECTOR_URL is not set: CI could not install pgvector\n');
  console.warn(
    '\n  pgvector tests skipped: set MNEMO_TEST_PGVECTOR_URL to a database whose server has pgvector\n',
  );
}

/** The embedding column's type and the embedding index of a schema. */
async function embeddingStorage(schema: string): Promise<{ type: string; index: string | null }> {
  const { rows } = await queryOn(
    PGVECTOR_URL as string,
    `SELECT format_type(a.atttypid, a.atttypmod) AS type,
            (SELECT indexdef FROM pg_indexes WHERE schemaname = $2 AND indexname = 'mnemo_records_embedding') AS index
     FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attname = 'embedding'`,
    [`"${schema}".mnemo_records`, schema],
  );
  return rows[0];
}

function newSchema(prefix: string): string {
  const schema = uniqueSchema(prefix);
  cleanup.push(() => dropSchema(schema, PGVECTOR_URL));
  return schema;
}

describe.skipIf(PGVECTOR_URL === undefined)('pgvector', () => {
  it('stores embeddings in vector(n) without an ANN index and ranks by exact cosine', async () => {
    const schema = newSchema('pgvector');
    const store = createPostgresStore({
      connectionString: PGVECTOR_URL as string,
      schema,
      vector: 'pgvector',
      vectorDimensions: 32,
    });
    cleanup.push(() => store.close());
    const embedder = createHashEmbedder({ dimensions: 32 });
    const engine = createEngine({ store, embedder });
    await engine.init();
    const storage = await embeddingStorage(schema);
    expect(storage.type).toBe('vector(32)');
    expect(storage.index).toBeNull();

    const agent = engine.as('agent-a');
    const texts = [
      'alpine lakes and mountain hiking trails',
      'mountain biking in the alps',
      'recipes for sourdough bread',
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
  });

  it('auto picks pgvector when the server has it; array forces real[]', async () => {
    const auto = newSchema('auto');
    const plain = newSchema('plain');
    for (const [schema, vector] of [
      [auto, 'auto'],
      [plain, 'array'],
    ] as const) {
      const store = createPostgresStore({
        connectionString: PGVECTOR_URL as string,
        schema,
        vector,
      });
      cleanup.push(() => store.close());
      await store.init();
    }
    expect([(await embeddingStorage(auto)).type, (await embeddingStorage(plain)).type]).toEqual([
      'vector',
      'real[]',
    ]);
  });
});
