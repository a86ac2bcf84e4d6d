export {
  analyze,
  BM25_B,
  BM25_K1,
  MAX_TERM_LENGTH,
  queryTerms,
  STOP_WORDS,
  stem,
  type TermFrequency,
  termFrequencies,
} from './analyzer.js';
export {
  AUDIT_OPS,
  type AuditEvent,
  type AuditHead,
  type AuditOp,
  auditEventHash,
  GENESIS_HASH,
} from './audit/audit-event.js';
export type {
  AuditProblem,
  AuditProblemKind,
  AuditVerification,
  VerifyAuditOptions,
} from './audit/verify-audit.js';
export type {
  RecordProblem,
  RecordProblemKind,
  RecordVerification,
  VerifyRecordsOptions,
} from './audit/verify-records.js';
export { compareByteOrder } from './byte-order.js';
export { canonicalJson, sha256Hex } from './canonical.js';
export { createUuidV7Generator, noopEmbedder, systemClock } from './defaults.js';
export { createEngine, type Engine, type EngineOptions } from './engine/create-engine.js';
export {
  DEFAULT_LANE_WEIGHTS,
  LANES,
  type Lane,
  type LaneScore,
  type LaneWeights,
  RRF_K,
} from './engine/fusion.js';
export {
  type ForgetByFilters,
  type ForgetByIds,
  type ForgetInput,
  type ForgetMode,
  type ForgetResult,
  MemoryHandle,
  type RecallHit,
  type RecallInput,
  type RecallResult,
  type RecallStrategy,
  type RememberInput,
  type RememberResult,
  type ShareInput,
  type ShareResult,
} from './engine/memory-handle.js';
export { MAX_PLAN_TTL_MS, type PlanAccess, planAccess } from './engine/plan-access.js';
export type { PurgeResult } from './engine/purge-expired.js';
export {
  EXPORT_FORMAT,
  type ExportedRecord,
  exportFromJson,
  exportToJson,
  type ImportResult,
} from './engine/transfer.js';
export { ERROR_CODES, type ErrorCode, MnemoError, type MnemoErrorOptions } from './errors.js';
export {
  contentHash,
  dedupKey,
  normalizeContent,
  principalKey,
  recordHashFields,
} from './hashing.js';
export type { Clock } from './ports/clock.js';
export type { Embedder } from './ports/embedder.js';
export type { IdGenerator } from './ports/id-generator.js';
export type {
  AuditPage,
  Grant,
  LexicalQuery,
  ListQuery,
  MemoryStore,
  NewRecord,
  PlanCandidate,
  PlanCandidateQuery,
  PlanStats,
  RecordFilters,
  ScoredRecord,
  StoreCapabilities,
  StoreReader,
  StoreTx,
  VectorQuery,
  Visibility,
  VisibleRecord,
} from './ports/memory-store.js';
export { serialTx } from './ports/serial-tx.js';
export {
  isPlanRecord,
  type JsonObject,
  type JsonValue,
  MEMORY_TYPES,
  type MemoryRecord,
  type MemoryType,
  PERMISSIONS,
  type Permission,
  PLAN_METADATA_KEY,
  PLAN_SIGNATURE_STRATEGIES,
  PLAN_TAG,
  type PlanSignatureStrategy,
  type Principal,
  permissionFromLevel,
  permissionLevel,
  REDACTED_CONTENT,
  RESERVED_TAG_PATTERN,
  SCOPES,
  type Scope,
} from './records.js';
export {
  DEFAULT_LIMITS,
  DEFAULT_RECALL_LIMIT,
  EMBEDDING_BOUNDS,
  embeddingProblem,
  ID_PATTERN,
  type Limits,
  MAX_PAGE_SIZE,
  MAX_RECALL_LIMIT,
  singlePrecisionCosineError,
} from './validation.js';
