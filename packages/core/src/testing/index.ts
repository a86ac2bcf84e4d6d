export { bm25Reference, cosineReference } from './bm25-reference.js';
export type { ConformanceOptions, Fixture, Harness, TestApi } from './conformance/index.js';
export { runConformanceSuite, START } from './conformance/index.js';
export { createHashEmbedder, type HashEmbedderOptions } from './hash-embedder.js';
export { createManualClock, type ManualClock } from './manual-clock.js';
export { createSequentialIds } from './sequential-ids.js';
