import { DuckDBConnection } from '@duckdb/node-api';
import { createEngine } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** The same records in a store searching in SQL or on its in-memory index; one lexical recall. */
async function recall(searchIndex: 'sql' | 'memory', query: string) {
  // Runs of one posting: every posting is in the sorted table when the query runs.
  const store = createDuckDBStore({ path: ':memory:', postingsRunSize: 1, searchIndex });
  const engine = createEngine({
    store,
    clock: createManualClock('2026-03-01T00:00:00.000Z'),
    ids: createSequentialIds(),
  });
  await engine.init();
  closing.push(() => engine.close());
  const agent = engine.as('ann');
  for (const content of [
    'the river runs past the mill',
    'coffee by the river at dawn',
    'a mountain of paperwork',
    'word17 and word4242 appear here',
  ]) {
    await agent.remember({ content });
  }
  const run = vi.spyOn(DuckDBConnection.prototype, 'run');
  try {
    const { hits } = await agent.recall({ query, strategy: 'lexical', limit: 10 });
    const statements = run.mock.calls
      .map(([sql]) => sql)
      .filter((sql) => sql.includes('matching AS MATERIALIZED'));
    return { hits: hits.map((hit) => [hit.record.content, hit.score]), statements };
  } finally {
    run.mockRestore();
  }
}

describe('a lexical query of many terms, searched in SQL', () => {
  it('reads the sorted postings in one join rather than a branch per term, with the same answer', async () => {
    // A pasted document: 5,000 distinct words, four of them in the records.
    const words = Array.from({ length: 5000 }, (_, i) => `word${i}`);
    const query = [...words, 'river', 'mountain'].join(' ');
    const sql = await recall('sql', query);
    const memory = await recall('memory', query);
    expect(sql.statements).toHaveLength(1);
    expect(sql.statements[0]?.split('mnemo_postings_sorted').length).toBe(2);
    expect(sql.hits).toEqual(memory.hits);
    expect(sql.hits.map(([content]) => content)).toEqual([
      'word17 and word4242 appear here',
      'a mountain of paperwork',
      'coffee by the river at dawn',
      'the river runs past the mill',
    ]);
  });

  it('keeps a branch per term for a short query', async () => {
    const sql = await recall('sql', 'river mountain coffee');
    expect(sql.statements[0]?.split('mnemo_postings_sorted').length).toBe(4);
  });
});
