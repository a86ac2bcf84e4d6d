export { bm25Reference, cosineReference } from './bm25-reference.js';
export type {
  ConformanceOptions,
  Fixture,
  Harness,
  TamperAttack,
  TestApi,
} from './conformance/index.js';
export { CONFORMANCE_TEST_TIMEOUT_MS, runConformanceSuite, START } from './conformance/index.js';
export {
  type Ack,
  type AcknowledgedCheck,
  type CrashRoundOptions,
  type CrashRoundReport,
  type CrashRoundsOptions,
  type CrashWriterOptions,
  checkAcknowledged,
  crashFindings,
  crashRound,
  runCrashRounds,
  runCrashWriter,
} from './crash.js';
export { createHashEmbedder, type HashEmbedderOptions } from './hash-embedder.js';
export { createManualClock, type ManualClock } from './manual-clock.js';
export { memoryRecord } from './memory-record.js';
export { type ReliabilityCounts, tally } from './reliability-tally.js';
export { createSequentialIds } from './sequential-ids.js';
