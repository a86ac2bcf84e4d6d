import type * as Vitest from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../engine/create-engine.js';
import type { Embedder } from '../../ports/embedder.js';
import type { MemoryStore } from '../../ports/memory-store.js';
import type { JsonObject, Permission } from '../../records.js';
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
  /**
   * Makes `attack` on the store's data directly (raw SQL on its tables, as
   * someone with access to the database or file would), bypassing the engine,
   * and returns an initialized store to read the result through: the same
   * one, or a new one on the same data (which the suite closes). Stores whose
   * data cannot be reached from outside (an in-memory database) leave it out,
   * and the tamper-evidence spec is skipped for them.
   */
  tamper?(store: MemoryStore, attack: TamperAttack): Promise<MemoryStore>;
}

/** An attack on stored data; see `ConformanceOptions.tamper`. */
export type TamperAttack =
  /** Overwrites columns of a record row; the others stay. `deleted` sets or clears its deletion time. */
  | {
      kind: 'update_record';
      id: string;
      content?: string;
      contentHash?: string;
      metadata?: JsonObject;
      tags?: string[];
      deleted?: boolean;
    }
  /**
   * Replaces the signature tokens a plan is indexed under (its payload, which
   * its hash covers, stays), in every table that indexes them.
   */
  | { kind: 'update_plan_tokens'; id: string; tokens: string[] }
  /** Removes a record row (and nothing else). */
  | { kind: 'delete_record'; id: string }
  /** Inserts a copy of a record row under a new id. */
  | { kind: 'copy_record'; id: string; newId: string }
  /** Replaces the details of the audit event at `seq` of `chain`. */
  | { kind: 'update_event'; chain: string; seq: number; details: JsonObject }
  /** Removes the audit event at `seq` of `chain` (the recorded head stays). */
  | { kind: 'delete_event'; chain: string; seq: number }
  /** Exchanges the positions of two audit events of `chain`. */
  | { kind: 'swap_events'; chain: string; seqs: [number, number] }
  /** Shifts the events from `seq` on by one and puts a copy of event `seq - 1` at `seq`. */
  | { kind: 'insert_event'; chain: string; seq: number }
  /** Removes the events after `seq` and rewinds the recorded head to it, consistently. */
  | { kind: 'truncate_chain'; chain: string; seq: number }
  /**
   * Sets the `prevHash` and `hash` of the event at `seq` of `chain` (a forger
   * pointing it elsewhere and signing it again); its other columns stay.
   */
  | { kind: 'relink_event'; chain: string; seq: number; prevHash: string; hash: string }
  /** Removes the recorded head of `chain`; its events stay. */
  | { kind: 'delete_head'; chain: string }
  /** Inserts a copy of the grant of `recordId` to `granteeAgentId`, made out to `newGranteeAgentId`. */
  | { kind: 'copy_grant'; recordId: string; granteeAgentId: string; newGranteeAgentId: string }
  /** Sets the permission of the grant of `recordId` to `granteeAgentId`; its other columns stay. */
  | { kind: 'update_grant'; recordId: string; granteeAgentId: string; permission: Permission }
  /** Removes the grant of `recordId` to `granteeAgentId`. */
  | { kind: 'delete_grant'; recordId: string; granteeAgentId: string }
  /** Sets the running outcome of plan `planId`'s stats; the other columns stay. */
  | { kind: 'update_plan_stats'; planId: string; runningOutcome: number }
  /** Removes plan `planId`'s stats. */
  | { kind: 'delete_plan_stats'; planId: string };

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

/** The `code` of the error `pending` fails with (undefined for one without), or null when it succeeds. */
export function codeOf(pending: Promise<unknown>): Promise<string | undefined | null> {
  return pending.then(
    () => null,
    (error: unknown) => (error as { code?: string }).code,
  );
}

/**
 * `store` whose first transaction begins only once `race` has run: a call
 * that read its clock, then waited while another call committed. `raced()`
 * tells whether it has.
 */
export function racedBy(
  store: MemoryStore,
  race: () => Promise<unknown>,
): { store: MemoryStore; raced: () => boolean } {
  let raced = false;
  const racing = replacing(store, {
    transaction: async (work) => {
      if (!raced) {
        raced = true;
        await race();
      }
      return store.transaction(work);
    },
  });
  return { store: racing, raced: () => raced };
}

/** `store` with some of its methods replaced; the others are its own. */
export function replacing(store: MemoryStore, methods: Partial<MemoryStore>): MemoryStore {
  return new Proxy(store, {
    get(target, key) {
      if (Object.hasOwn(methods, key)) return methods[key as keyof MemoryStore];
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
