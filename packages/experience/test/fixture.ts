import { createEngine, type Engine, type MemoryStore } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { afterEach } from 'vitest';

const open: MemoryStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

/** An engine on a fresh in-memory DuckDB store, manual clock, sequential ids. */
export async function openEngine(
  options: { experienceMemory?: boolean; readAuditing?: boolean } = {},
): Promise<{
  engine: Engine;
  store: MemoryStore;
  clock: ReturnType<typeof createManualClock>;
}> {
  const store = createDuckDBStore({ path: ':memory:' });
  open.push(store);
  const clock = createManualClock('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock, ids: createSequentialIds(), ...options });
  await engine.init();
  return { engine, store, clock };
}
