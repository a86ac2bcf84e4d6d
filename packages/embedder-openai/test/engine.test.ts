import { createEngine } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAIEmbedder } from '../src/index.js';
import { type EmbeddingsServer, startEmbeddingsServer } from './embeddings-server.js';

let server: EmbeddingsServer;

beforeEach(async () => {
  server = await startEmbeddingsServer(64);
});
afterEach(() => server.close());

describe('an engine on DuckDB with the OpenAI-compatible embedder', () => {
  it('remembers three records and ranks a semantic recall by meaning', async () => {
    const embedder = createOpenAIEmbedder({
      baseURL: `${server.baseURL}/v1`,
      model: 'test-model',
      dimensions: 64,
    });
    const engine = createEngine({
      store: createDuckDBStore({ path: ':memory:' }),
      embedder,
      clock: createManualClock('2026-01-01T00:00:00.000Z'),
      ids: createSequentialIds(),
    });
    await engine.init();
    try {
      const agent = engine.as('agent-a');
      const staging = await agent.remember({
        content: 'The staging database is read only on Fridays',
      });
      const coffee = await agent.remember({ content: 'The team prefers coffee over tea' });
      const backups = await agent.remember({
        content: 'Database backups run nightly at two',
      });
      const result = await agent.recall({
        query: 'staging database fridays',
        strategy: 'semantic',
      });
      expect(result.strategy).toBe('semantic');
      expect(result.hits.map((hit) => hit.record.id)).toEqual([staging.id, backups.id, coffee.id]);
      expect(server.requests.map((request) => request.body.input)).toEqual([
        ['The staging database is read only on Fridays'],
        ['The team prefers coffee over tea'],
        ['Database backups run nightly at two'],
        ['staging database fridays'],
      ]);
    } finally {
      await engine.close();
    }
  });
});
