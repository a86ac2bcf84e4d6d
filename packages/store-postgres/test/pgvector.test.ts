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

  it('ranks and scores exactly as in double precision, near-ties included', async () => {
    // Permutations of one vector tie exactly in double precision, but not in pgvector's single
    // precision sums, which ranked them in a different order than the other stores.
    const dimensions = 64;
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const base = Array.from({ length: dimensions }, () => random() - 0.3);
    const vectors = new Map<string, Float32Array>([
      ['query', new Float32Array(dimensions).fill(1)],
    ]);
    // 200 ties: more than the candidates of a first pass, so a second pass rescores them all.
    for (let i = 0; i < 200; i += 1) {
      const permuted = [...base];
      for (let j = permuted.length - 1; j > 0; j -= 1) {
        const k = Math.floor(random() * (j + 1));
        [permuted[j], permuted[k]] = [permuted[k] as number, permuted[j] as number];
      }
      vectors.set(`perm ${String(i).padStart(3, '0')}`, Float32Array.from(permuted));
    }
    // And records of distinct, lower similarities, so the ties are the top.
    const query = vectors.get('query') as Float32Array;
    const tie = cosineReference(query, Float32Array.from(base));
    while (vectors.size < 251) {
      const other = Float32Array.from(base, (x) => x + (random() - 0.5));
      if (cosineReference(query, other) < tie - 1e-3) vectors.set(`other ${vectors.size}`, other);
    }
    const embedder = {
      dimensions,
      semantic: true,
      maxBatchSize: 256,
      embed: async (texts: readonly string[]) =>
        texts.map((text) => vectors.get(text) as Float32Array),
    };
    const results: unknown[] = [];
    const stores = [
      ['pgvector', 'sql'],
      ['pgvector', 'memory'],
      ['array', 'sql'],
    ] as const;
    for (const [vector, vectorIndex] of stores) {
      const store = createPostgresStore({
        connectionString: PGVECTOR_URL as string,
        schema: newSchema(`exact_${vector}_${vectorIndex}`),
        vector,
        vectorDimensions: dimensions,
        vectorIndex,
      });
      cleanup.push(() => store.close());
      const engine = createEngine({ store, embedder, readAuditing: false });
      await engine.init();
      const agent = engine.as('agent-a');
      await agent.rememberMany([...vectors.keys()].slice(1).map((content) => ({ content })));
      const answers = [];
      for (const limit of [3, 10, 100]) {
        const { hits } = await agent.recall({ query: 'query', strategy: 'semantic', limit });
        answers.push(hits.map((hit) => [hit.record.content, hit.score]));
      }
      results.push(answers);
    }
    type Answers = [string, number][][];
    const [pgvector, memory, array] = results as [Answers, Answers, Answers];
    expect(pgvector).toEqual(array);
    expect(memory).toEqual(array);
    // The permutations tie at the top: in id order, with one score.
    for (const answer of pgvector) {
      expect(answer.map(([content]) => content)).toEqual(
        answer.map((_, i) => `perm ${String(i).padStart(3, '0')}`),
      );
      expect(new Set(answer.map(([, score]) => score)).size).toBe(1);
    }
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
