import type { Clock } from '../ports/clock.js';
import type { Embedder } from '../ports/embedder.js';
import type { IdGenerator } from '../ports/id-generator.js';
import type { MemoryStore } from '../ports/memory-store.js';
import type { PlanSignatureStrategy } from '../records.js';
import type { Limits } from '../validation.js';
import type { CallsInFlight } from './calls-in-flight.js';
import type { LaneWeights } from './fusion.js';
import type { WriteCoalescer } from './write-coalescer.js';

/** Everything an engine's handles share. Internal: not exported from the package. */
export interface EngineContext {
  readonly store: MemoryStore;
  readonly embedder: Embedder;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly limits: Limits;
  readonly laneWeights: LaneWeights;
  readonly experienceMemory: boolean;
  readonly experienceSignature: PlanSignatureStrategy;
  readonly readAuditing: boolean;
  /** Group commit of record writes, shared by every handle (and `with()` copy) of the engine. */
  readonly writer: WriteCoalescer;
  /** The calls under way, which `engine.close()` waits for; shared like `writer`. */
  readonly calls: CallsInFlight;
}
