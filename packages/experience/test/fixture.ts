import {
  createEngine,
  type Engine,
  type IdGenerator,
  type MemoryStore,
  type PlanSignatureStrategy,
} from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { createPostgresStore } from '@mnemo/store-postgres';
import pg from 'pg';
import { afterEach } from 'vitest';

/** The stores the experience tests run on: DuckDB always, PostgreSQL when `MNEMO_TEST_PG_URL` is set. */
export const PG_URL = process.env.MNEMO_TEST_PG_URL;
export const STORES: readonly ('duckdb' | 'postgres')[] =
  PG_URL === undefined ? ['duckdb'] : ['duckdb', 'postgres'];
if (PG_URL === undefined && process.env.CI)
  throw new Error('MNEMO_TEST_PG_URL is not set: CI must start PostgreSQL');

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

let schemas = 0;
function createStore(kind: 'duckdb' | 'postgres'): MemoryStore {
  if (kind === 'duckdb') return createDuckDBStore({ path: ':memory:' });
  schemas += 1;
  const schema = `experience_${process.pid}_${schemas}`;
  cleanup.push(async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });
  return createPostgresStore({ connectionString: PG_URL as string, schema, maxConnections: 2 });
}

/** An engine on a fresh store (in-memory DuckDB by default), manual clock, sequential ids unless given. */
export async function openEngine(
  options: {
    experienceMemory?: boolean;
    experienceSignature?: PlanSignatureStrategy;
    readAuditing?: boolean;
    ids?: IdGenerator;
  } = {},
  kind: 'duckdb' | 'postgres' = 'duckdb',
): Promise<{
  engine: Engine;
  store: MemoryStore;
  clock: ReturnType<typeof createManualClock>;
}> {
  const store = createStore(kind);
  cleanup.push(() => store.close());
  const clock = createManualClock('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock, ids: createSequentialIds(), ...options });
  await engine.init();
  return { engine, store, clock };
}
