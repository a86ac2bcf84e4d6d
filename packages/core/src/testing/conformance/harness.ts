import type * as Vitest from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../engine/create-engine.js';
import type { Embedder } from '../../ports/embedder.js';
import type { MemoryStore } from '../../ports/memory-store.js';
import { createManualClock, type ManualClock } from '../manual-clock.js';
import { createSequentialIds } from '../sequential-ids.js';

/** The parts of the test runner the suite uses (vitest, or anything shaped like it). */
export type TestApi = Pick<
  typeof Vitest,
  'describe' | 'it' | 'expect' | 'beforeEach' | 'afterEach'
>;

export interface ConformanceOptions {
  /** Shown in test names. */
  name: string;
  /** A new, empty, not yet initialized store. Called once per test. */
  createStore(): MemoryStore | Promise<MemoryStore>;
  /** Removes what `createStore` made (files, schemas), after the store is closed. */
  destroyStore?(store: MemoryStore): void | Promise<void>;
}

/** The instant every conformance test starts at. */
export const START = '2026-01-01T00:00:00.000Z';

export interface Fixture {
  store: MemoryStore;
  engine: Engine;
  clock: ManualClock;
}

export interface Harness {
  /**
   * An initialized store and an engine on it with a manual clock at `START`
   * and sequential ids (`id-000001`, …). Closed and destroyed after the test.
   */
  open(
    options?: { embedder?: Embedder } & Partial<Omit<EngineOptions, 'store' | 'clock' | 'ids'>>,
  ): Promise<Fixture>;
}

export function createHarness(t: TestApi, options: ConformanceOptions): Harness {
  const opened: MemoryStore[] = [];
  t.afterEach(async () => {
    for (const store of opened.splice(0)) {
      await store.close();
      await options.destroyStore?.(store);
    }
  });
  return {
    async open(engineOptions = {}) {
      const store = await options.createStore();
      opened.push(store);
      await store.init();
      const clock = createManualClock(START);
      const engine = createEngine({ ...engineOptions, store, clock, ids: createSequentialIds() });
      return { store, engine, clock };
    },
  };
}
