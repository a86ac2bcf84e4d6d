import { compareByteOrder } from './byte-order.js';

export const MEMORY_TYPES = ['episodic', 'semantic', 'procedural', 'working'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

/**
 * Who may see a record: `private` the owner only; `shared` the owner and agents
 * holding a live grant; `public` every agent of the owner's org; `global` every agent.
 */
export const SCOPES = ['private', 'shared', 'public', 'global'] as const;
export type Scope = (typeof SCOPES)[number];

/** Permission hierarchy, weakest first. Holding one implies all weaker ones. */
export const PERMISSIONS = ['read', 'write', 'delete', 'share', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** Numeric level of a permission (read = 1 … admin = 5), as stores persist it. */
export function permissionLevel(permission: Permission): number {
  return PERMISSIONS.indexOf(permission) + 1;
}

/** The permission for a numeric level; 0 or less means none. */
export function permissionFromLevel(level: number): Permission | null {
  return PERMISSIONS[level - 1] ?? null;
}

/**
 * Tags of the form `__name__` are reserved for mnemo's own packages; ordinary
 * `remember` rejects them.
 */
export const RESERVED_TAG_PATTERN = /^__.*__$/;

/** The reserved tag that marks a record as an experience plan (see @mnemo/experience). */
export const PLAN_TAG = '__experience_plan__';
/** The metadata key holding a plan's payload. A key alone does not make a plan: the tag does. */
export const PLAN_METADATA_KEY = 'experience_plan';

/**
 * How plan signatures are computed (see @mnemo/experience): `default` is
 * SPEC §4's bag of words; `enriched` adds stemming, slots, negation and
 * direction. Chosen per engine and recorded with each plan; a query is only
 * compared with plans of its own strategy. Core carries the name, the
 * experience package implements it.
 */
export const PLAN_SIGNATURE_STRATEGIES = ['default', 'enriched'] as const;
export type PlanSignatureStrategy = (typeof PLAN_SIGNATURE_STRATEGIES)[number];

export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** The principal an operation runs as. `orgId` null means "no tenant". */
export interface Principal {
  readonly agentId: string;
  readonly orgId: string | null;
}

export interface MemoryRecord {
  /** UUIDv7 (time-ordered) unless the engine was given another id generator. */
  id: string;
  /** The owner. */
  agentId: string;
  /** The owner's tenant, or null. */
  orgId: string | null;
  content: string;
  memoryType: MemoryType;
  scope: Scope;
  /** 0..1. */
  importance: number;
  tags: string[];
  metadata: JsonObject;
  embedding: Float32Array | null;
  /** SHA-256 hex of the canonical serialization of the security-relevant fields (see `recordHashFields`). */
  contentHash: string;
  threadId: string | null;
  sourceType: string | null;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date | null;
  deletedAt: Date | null;
  accessCount: number;
  lastAccessedAt: Date | null;
}

/** True when the record carries the reserved plan tag. */
export function isPlanRecord(record: Pick<MemoryRecord, 'tags'>): boolean {
  return record.tags.includes(PLAN_TAG);
}

/**
 * The tokens a plan is indexed under: `tokens` distinct, in byte order. Stores
 * bound plan lookup by the number of tokens, which must be the size of the set
 * the similarity is computed over, however a payload or a caller lists them.
 */
export function planIndexTokens(tokens: readonly string[]): string[] {
  return [...new Set(tokens)].sort(compareByteOrder);
}

/** Text that replaces the content of a record redacted through `forget`. */
export const REDACTED_CONTENT = '[redacted]';
