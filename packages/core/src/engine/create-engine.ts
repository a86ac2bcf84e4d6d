import {
  type AuditVerification,
  type VerifyAuditOptions,
  verifyAudit,
} from '../audit/verify-audit.js';
import {
  type RecordVerification,
  type VerifyRecordsOptions,
  verifyRecords,
} from '../audit/verify-records.js';
import { createUuidV7Generator, noopEmbedder, systemClock } from '../defaults.js';
import { invalidInput } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { Embedder } from '../ports/embedder.js';
import type { IdGenerator } from '../ports/id-generator.js';
import type { MemoryStore } from '../ports/memory-store.js';
import {
  PLAN_SIGNATURE_STRATEGIES,
  type PlanSignatureStrategy,
  type Principal,
} from '../records.js';
import {
  checkKeys,
  DEFAULT_LIMITS,
  type Limits,
  validateId,
  validatePageSize,
} from '../validation.js';
import { CallsInFlight } from './calls-in-flight.js';
import type { EngineContext } from './engine-context.js';
import { DEFAULT_LANE_WEIGHTS, type LaneWeights } from './fusion.js';
import { MemoryHandle } from './memory-handle.js';
import { type PurgeResult, purgeExpired } from './purge-expired.js';
import {
  type ExportedRecord,
  exportRecords,
  type ImportResult,
  importRecords,
} from './transfer.js';
import { WriteCoalescer } from './write-coalescer.js';

export interface EngineOptions {
  /** Where records live. The engine does not own it until `engine.init()` / `engine.close()` are used. */
  store: MemoryStore;
  /** Default: the no-op embedder (lexical recall only). */
  embedder?: Embedder;
  /** Default: the system clock. */
  clock?: Clock;
  /** Default: UUIDv7. */
  ids?: IdGenerator;
  /** Turns the experience tier on (see @mnemo/experience). Default false. */
  experienceMemory?: boolean;
  /**
   * How plan signatures are computed: `default` (SPEC §4) or `enriched` (see
   * @mnemo/experience). Recorded with each plan; queries only match plans of
   * the same strategy. Default `default`. Anything else is `INVALID_INPUT`.
   */
  experienceSignature?: PlanSignatureStrategy;
  /** Audit recalls and plan replays too (and count accesses). Default true. */
  readAuditing?: boolean;
  /** Size limits on input. */
  limits?: Partial<Limits>;
  /** Weights of the hybrid lanes. Default lexical 1, semantic 1, recency 0.25. */
  laneWeights?: Partial<LaneWeights>;
}

export interface Engine {
  readonly store: MemoryStore;
  readonly embedder: Embedder;
  /** Whether the experience tier is on. */
  readonly experienceMemory: boolean;
  /** The plan signature strategy of this engine. */
  readonly experienceSignature: PlanSignatureStrategy;
  /** Whether recalls are audited. */
  readonly readAuditing: boolean;
  /** Initializes the store (migrations). */
  init(): Promise<void>;
  /**
   * Lets the calls already made (on any handle or `with()` copy) finish, then
   * closes the store. Calls made once it has been called are
   * `STORE_UNAVAILABLE`, and so is an export's next page. Idempotent.
   */
  close(): Promise<void>;
  /**
   * A handle acting as `agentId` (of `orgId`, if given). Authenticate the agent
   * in your application before calling this: the handle is the identity.
   * Throws `INVALID_INPUT` for an id outside `[A-Za-z0-9._-]{1,256}`.
   */
  as(agentId: string, options?: { orgId?: string | null }): MemoryHandle;
  /** Verifies every audit chain; see `VerifyAuditOptions`. */
  verifyAudit(options?: VerifyAuditOptions): Promise<AuditVerification>;
  /**
   * Verifies every record against its hash and the audit log (a changed,
   * forged, vanished or resurrected record); see `verifyRecords`. Run it with
   * `verifyAudit`, which proves the log it relies on.
   */
  verifyRecords(options?: VerifyRecordsOptions): Promise<RecordVerification>;
  /**
   * Every record of the store (all owners, deleted ones and plans included)
   * with its grants, in id order: a backup or migration stream. Operator-level:
   * do not hand it to agents.
   */
  exportRecords(options?: { pageSize?: number }): AsyncGenerator<ExportedRecord>;
  /**
   * Writes exported records back with every field and grant kept, verifying
   * each record's hash; records whose id exists are skipped. Operator-level.
   */
  importRecords(
    records: Iterable<ExportedRecord> | AsyncIterable<ExportedRecord>,
  ): Promise<ImportResult>;
  /**
   * Forgets for good every record whose expiry has passed, whatever its owner,
   * with a `forget` event in each owner's chain; see `purgeExpired`.
   * Operator-level: run it on a schedule to keep expired memories from lingering.
   */
  purgeExpired(options?: { pageSize?: number }): Promise<PurgeResult>;
  /**
   * The same engine (same store and ports) with some options changed. An
   * unknown `experienceSignature` is `INVALID_INPUT`.
   */
  with(options: {
    experienceMemory?: boolean;
    experienceSignature?: PlanSignatureStrategy;
    readAuditing?: boolean;
  }): Engine;
}

/** Creates an engine from injected ports. Does no I/O. */
export function createEngine(options: EngineOptions): Engine {
  if (typeof options !== 'object' || options === null || typeof options.store !== 'object') {
    throw invalidInput('options.store', 'a MemoryStore is required');
  }
  checkKeys('options', options, ENGINE_OPTIONS);
  if (options.limits !== undefined)
    checkKeys('options.limits', options.limits, Object.keys(DEFAULT_LIMITS));
  if (options.laneWeights !== undefined)
    checkKeys('options.laneWeights', options.laneWeights, Object.keys(DEFAULT_LANE_WEIGHTS));
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1)
      throw invalidInput(`options.limits.${key}`, 'must be a positive integer');
  }
  const laneWeights = { ...DEFAULT_LANE_WEIGHTS, ...options.laneWeights };
  for (const [key, value] of Object.entries(laneWeights)) {
    if (!Number.isFinite(value) || value < 0)
      throw invalidInput(`options.laneWeights.${key}`, 'must be a number ≥ 0');
  }
  if (options.ids !== undefined && typeof options.ids !== 'function')
    throw invalidInput('options.ids', 'must be a function returning a new id');
  if (
    options.clock !== undefined &&
    (typeof options.clock !== 'object' ||
      options.clock === null ||
      typeof options.clock.now !== 'function')
  ) {
    throw invalidInput('options.clock', 'must be a Clock ({ now(): Date })');
  }
  const ids = options.ids ?? createUuidV7Generator();
  return engineFrom({
    store: options.store,
    embedder: options.embedder === undefined ? noopEmbedder : checkEmbedder(options.embedder),
    clock: options.clock === undefined ? systemClock : checkedClock(options.clock),
    ids,
    writer: new WriteCoalescer(options.store, ids),
    calls: new CallsInFlight(),
    limits,
    laneWeights,
    experienceMemory: flag('options.experienceMemory', options.experienceMemory, false),
    experienceSignature: signatureStrategy(options.experienceSignature, 'default'),
    readAuditing: flag('options.readAuditing', options.readAuditing, true),
  });
}

/**
 * A custom clock whose every reading is checked, as the ids of a custom
 * generator are: anything but a valid Date fails the call with
 * `INVALID_INPUT` (naming `options.clock`) before it writes, not with a
 * `TypeError` from deep inside.
 */
function checkedClock(clock: Clock): Clock {
  return {
    now: () => {
      const now: unknown = clock.now();
      if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
        throw invalidInput('options.clock', 'now() must return a valid Date');
      }
      return new Date(now.getTime());
    },
  };
}

const ENGINE_OPTIONS = [
  'store',
  'embedder',
  'clock',
  'ids',
  'experienceMemory',
  'experienceSignature',
  'readAuditing',
  'limits',
  'laneWeights',
];

/**
 * The members of an embedder the engine relies on. Without a usable
 * `maxBatchSize` the write path embedded nothing and wrote nothing, and
 * `remember` resolved to undefined. `dimensions` is not checked here: an
 * embedder may only know it once its model is loaded.
 */
function checkEmbedder(embedder: unknown): Embedder {
  if (typeof embedder !== 'object' || embedder === null)
    throw invalidInput('options.embedder', 'must be an Embedder');
  const { semantic, maxBatchSize, embed } = embedder as Partial<Embedder>;
  if (typeof embed !== 'function')
    throw invalidInput('options.embedder.embed', 'must be a function');
  if (typeof semantic !== 'boolean')
    throw invalidInput('options.embedder.semantic', 'must be true or false');
  if (
    typeof maxBatchSize !== 'number' ||
    !(Number.isInteger(maxBatchSize) || maxBatchSize === Number.POSITIVE_INFINITY) ||
    maxBatchSize < 1
  )
    throw invalidInput('options.embedder.maxBatchSize', 'must be a whole number ≥ 1, or Infinity');
  return embedder as Embedder;
}

/** A boolean option: `fallback` when absent, `INVALID_INPUT` when not a boolean. */
function flag(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidInput(field, 'must be true or false');
  return value;
}

/** The principal of `engine.as(agentId, options)`; `orgId` absent or null means no org. */
function principalOf(agentId: unknown, options: unknown): Principal {
  const { orgId } =
    options === undefined ? { orgId: undefined } : checkKeys('options', options, ['orgId']);
  return {
    agentId: validateId('agentId', agentId),
    orgId: orgId === undefined || orgId === null ? null : validateId('orgId', orgId),
  };
}

/**
 * The options of an operator call (absent: none), with unknown keys rejected:
 * a misspelt `knownHeads` would otherwise silently skip the truncation check.
 */
function callOptions<T extends object>(options: T | undefined, known: readonly string[]): T {
  if (options === undefined) return {} as T;
  return checkKeys('options', options, known) as T;
}

function signatureStrategy(value: unknown, fallback: PlanSignatureStrategy): PlanSignatureStrategy {
  if (value === undefined) return fallback;
  const found = PLAN_SIGNATURE_STRATEGIES.find((strategy) => strategy === value);
  if (found === undefined) {
    throw invalidInput(
      'options.experienceSignature',
      `must be one of ${PLAN_SIGNATURE_STRATEGIES.join(', ')}`,
    );
  }
  return found;
}

function engineFrom(context: EngineContext): Engine {
  return {
    store: context.store,
    embedder: context.embedder,
    experienceMemory: context.experienceMemory,
    experienceSignature: context.experienceSignature,
    readAuditing: context.readAuditing,
    init: () => context.store.init(),
    close: async () => {
      await context.calls.close();
      await context.store.close();
    },
    as: (agentId, asOptions) => new MemoryHandle(context, principalOf(agentId, asOptions)),
    verifyAudit: (verifyOptions) =>
      context.calls.run(async () =>
        verifyAudit(context.store, callOptions(verifyOptions, ['knownHeads', 'pageSize'])),
      ),
    verifyRecords: (verifyOptions) =>
      context.calls.run(async () =>
        verifyRecords(context.store, callOptions(verifyOptions, ['pageSize'])),
      ),
    exportRecords: (exportOptions) => {
      const { pageSize } = callOptions(exportOptions, ['pageSize']);
      return exportRecords(context, validatePageSize(pageSize, 500));
    },
    importRecords: (records) => context.calls.run(() => importRecords(context, records)),
    purgeExpired: (purgeOptions) =>
      context.calls.run(async () =>
        purgeExpired(context, callOptions(purgeOptions, ['pageSize']).pageSize),
      ),
    with: (changes) => {
      checkKeys('options', changes, ['experienceMemory', 'experienceSignature', 'readAuditing']);
      return engineFrom({
        ...context,
        experienceMemory: flag(
          'options.experienceMemory',
          changes.experienceMemory,
          context.experienceMemory,
        ),
        experienceSignature: signatureStrategy(
          changes.experienceSignature,
          context.experienceSignature,
        ),
        readAuditing: flag('options.readAuditing', changes.readAuditing, context.readAuditing),
      });
    },
  };
}
