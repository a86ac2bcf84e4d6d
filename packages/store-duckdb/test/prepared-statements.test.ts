import { DuckDBConnection } from '@duckdb/node-api';
import { createEngine } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('DuckDB prepared statements', () => {
  it('prepares the one-row audit, chain head and access statements and the read of ranked rows once, then reuses them', async () => {
    const prepare = vi.spyOn(DuckDBConnection.prototype, 'prepare');
    const store = createDuckDBStore({ path: ':memory:' });
    const engine = createEngine({
      store,
      clock: createManualClock('2026-01-01T00:00:00.000Z'),
      ids: createSequentialIds(),
    });
    try {
      await engine.init();
      const agent = engine.as('agent-a');
      const ids: string[] = [];
      for (let i = 0; i < 10; i += 1) {
        ids.push((await agent.remember({ content: `fact number ${i}` })).id);
        expect((await agent.recall({ query: 'fact number' })).hits).toHaveLength(i + 1);
      }
      const statements = prepare.mock.calls.map(([sql]) => sql.split(/\s+/).slice(0, 3).join(' '));
      expect(statements.sort()).toEqual([
        'INSERT INTO mnemo_accesses',
        'INSERT INTO mnemo_audit_events',
        'INSERT INTO mnemo_audit_heads',
        'SELECT r.id, r.agent_id,', // on the one reader these sequential recalls use
        'UPDATE mnemo_audit_heads SET',
      ]);
      expect((await engine.verifyAudit()).events).toBe(20);
      expect((await agent.get(ids[0] as string)).accessCount).toBe(10);
    } finally {
      await engine.close();
    }
  });
});
