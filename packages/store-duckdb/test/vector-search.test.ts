import { createEngine, type Embedder, REDACTED_CONTENT } from '@mnemo/core';
import { cosineReference, createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';
import { BEFORE_EMBEDDING_NORMS, queryFile, runOnFile } from './raw-file.js';
import { useTempFolder } from './temp-folder.js';

const { file, cleanup } = useTempFolder('mnemo-duckdb-vector-search-');

/** An embedder that returns the vector listed for each text, padded with zeros to `dimensions`. */
function tableEmbedder(
  vectors: ReadonlyMap<string, readonly number[]>,
  dimensions: number,
): Embedder {
  return {
    dimensions,
    semantic: true,
    maxBatchSize: 1000,
    async embed(texts) {
      return texts.map((text) => {
        const vector = vectors.get(text);
        if (vector === undefined) throw new Error(`no vector for ${text}`);
        const padded = new Float32Array(dimensions);
        padded.set(vector);
        return padded;
      });
    },
  };
}

/** The store's `vectorDimensions` option, the size of the embedder's vectors, and the column's type. */
interface Sizes {
  vectorDimensions: number | undefined;
  dimensions: number;
  column: string;
}

async function openWith(
  vectors: ReadonlyMap<string, readonly number[]>,
  { vectorDimensions, dimensions }: Sizes,
  path = file('v.duckdb'),
  ids = createSequentialIds(),
) {
  const store = createDuckDBStore({ path, vectorDimensions });
  const engine = createEngine({
    store,
    embedder: tableEmbedder(vectors, dimensions),
    clock: createManualClock('2026-01-01T00:00:00.000Z'),
    ids,
  });
  cleanup.push(() => engine.close());
  await engine.init();
  return engine.as('agent-a');
}

/** Contents of `stored` ranked as the store must: exact cosine to 10 decimals, then id (insertion order). */
function exactRanking(
  vectors: ReadonlyMap<string, readonly number[]>,
  stored: readonly string[],
  query: string,
): string[] {
  const q = Float32Array.from(vectors.get(query) as number[]);
  const round = (x: number) => Math.round(x * 1e10) / 1e10;
  return stored
    .map((content, order) => ({
      content,
      order,
      score: round(cosineReference(Float32Array.from(vectors.get(content) as number[]), q)),
    }))
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map(({ content }) => content);
}

describe.each<[string, Sizes]>([
  ['a FLOAT[3] array', { vectorDimensions: 3, dimensions: 3, column: 'FLOAT[3]' }],
  [
    'a FLOAT[3] array the first embedding fixed',
    { vectorDimensions: undefined, dimensions: 3, column: 'FLOAT[3]' },
  ],
  // Past the largest array, the column stays a list (zeros pad the listed vectors).
  [
    'a FLOAT[] list of 65,536',
    { vectorDimensions: undefined, dimensions: 65_536, column: 'FLOAT[]' },
  ],
])('DuckDB vector search, embeddings in %s', (_kind, sizes) => {
  // The search estimates every similarity in FLOAT and rescores only the best estimates in
  // DOUBLE. In FLOAT, 1 + (2^-24 - 2^-34) is 1, so `best` (the most similar, by 4e-8) is
  // estimated just below the 100 near-ties, which fill every candidate place and differ by
  // up to 1e-15: only a search that knows how far its estimates may be off sees that they
  // cannot tell, and scores everything exactly.
  it('finds the most similar record when FLOAT rounding ranks it below many others', async () => {
    const ties = Array.from({ length: 100 }, (_, i) => `tie ${String(i).padStart(3, '0')}`);
    const vectors = new Map<string, number[]>([
      ['query', [1, 1, 0]],
      ['best', [1, 2 ** -24 - 2 ** -34, 0]],
      ...ties.map((tie, i): [string, number[]] => [tie, [1, 0, i * 2 ** -31]]),
    ]);
    const agent = await openWith(vectors, sizes);
    await agent.rememberMany(['best', ...ties].map((content) => ({ content })));

    const { hits } = await agent.recall({ query: 'query', strategy: 'semantic', limit: 3 });
    const tie = Math.round(Math.SQRT1_2 * 1e10) / 1e10; // scores are rounded to 10 decimals
    expect(hits.map((hit) => [hit.record.content, hit.score])).toEqual([
      ['best', 0.7071068233],
      ['tie 000', tie],
      ['tie 001', tie],
    ]);
  });

  // Outside 2^-40 … 2^40, FLOAT products may overflow or lose digits to underflow, so the
  // estimate's error bound does not hold: such records are always rescored, and a query of
  // such a norm is scored exactly throughout.
  it('ranks vectors of extreme norms by their exact cosine', async () => {
    // As far as core's embedding bounds go (components within ±2^50, a non-zero norm at least
    // 2^-50): the int8 codes scale each vector, and the bound on their loss holds at any norm.
    const plain = Array.from({ length: 100 }, (_, i) => `plain ${i}`);
    const vectors = new Map<string, number[]>([
      ['huge a', [1.1e15, 3.7e14, -7.4e14]],
      ['huge b', [3.7e14, 3.7e14, 3.7e13]],
      ['tiny a', [3e-15, -1e-15, 2e-15]],
      ['tiny b', [9e-16, 1e-16, 1e-16]],
      ...plain.map((content, i): [string, number[]] => [
        content,
        [Math.cos(i), Math.sin(i), (i % 7) / 10],
      ]),
      ['huge query', [1e15, 5e14, 5e14]],
      ['tiny query', [2e-15, 1e-15, 1e-15]],
      ['plain query', [1, 0.5, 0.25]],
    ]);
    const stored = ['huge a', 'huge b', 'tiny a', 'tiny b', ...plain];
    const agent = await openWith(vectors, sizes);
    await agent.rememberMany(stored.map((content) => ({ content })));

    for (const query of ['huge query', 'tiny query', 'plain query']) {
      const { hits } = await agent.recall({ query, strategy: 'semantic', limit: 10 });
      expect(hits.map((hit) => hit.record.content)).toEqual(
        exactRanking(vectors, stored, query).slice(0, 10),
      );
    }
  });

  it('keeps each embedding’s norm, and computes it for a file saved without one', async () => {
    const path = file('norms.duckdb');
    const vectors = new Map<string, number[]>([
      ['query', [1, 2, 2]],
      ['a', [3, 4, 0]],
      ['b', [0.5, 1, 1]],
      ['c', [1, 0, 0]],
      ['d', [0, 0, 5]],
    ]);
    const norms = () =>
      queryFile(path, 'SELECT content, embedding_norm FROM mnemo_records ORDER BY id');
    const ids = createSequentialIds();
    const first = await openWith(vectors, sizes, path, ids);
    const [, , c] = await first.rememberMany(['a', 'b', 'c'].map((content) => ({ content })));
    await first.forget({ ids: [c?.id as string], mode: 'redact' });
    await cleanup.pop()?.();
    const saved = [
      { content: 'a', embedding_norm: 5 },
      { content: 'b', embedding_norm: 1.5 },
      { content: REDACTED_CONTENT, embedding_norm: null },
    ];
    expect(await norms()).toEqual(saved);
    expect(
      await queryFile(
        path,
        'SELECT DISTINCT typeof(embedding) AS type FROM mnemo_records WHERE embedding IS NOT NULL',
      ),
    ).toEqual([{ type: sizes.column }]);

    await runOnFile(path, BEFORE_EMBEDDING_NORMS);
    const reopened = await openWith(vectors, sizes, path, ids);
    await reopened.remember({ content: 'd' });
    const { hits } = await reopened.recall({ query: 'query', strategy: 'semantic' });
    expect(hits.map((hit) => [hit.record.content, hit.score])).toEqual([
      ['b', 1],
      ['a', 0.7333333333],
      ['d', 0.6666666667],
    ]);
    await cleanup.pop()?.();
    expect(await norms()).toEqual([...saved, { content: 'd', embedding_norm: 5 }]);
    expect(
      await queryFile(path, 'SELECT version, name FROM mnemo_migrations WHERE version = 7'),
    ).toEqual([{ version: 7, name: 'embedding norms' }]);
  });
});
