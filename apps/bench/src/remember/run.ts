import { performance } from 'node:perf_hooks';
import { createEngine, type Embedder, type MemoryHandle, type RememberResult } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import { type MachineInfo, machineInfo } from '../shared/machine.js';
import {
  countRecords,
  createFreshStore,
  postgresVersion,
  type StoreTarget,
  usingStore,
} from '../shared/stores.js';
import { loadWorkload, makeTexts, type Workload } from '../shared/workload.js';
import { type RawFigures, runRawBaselines } from './raw.js';

/** Dimensions of the hash embedder (the reference figures used 384). */
export const DIMENSIONS = 384;
/** The sequential modes (mnemo and raw) time at most this many records. */
export const SEQUENTIAL_LIMIT = 2000;
/** `remember` calls in flight in the concurrent mode. */
export const CONCURRENCY = 32;
/** Records per `rememberMany` call in the batch mode. */
export const BATCH_SIZE = 1000;
/** The agent every record belongs to. */
export const AGENT = 'bench-writer';

export interface RememberBenchOptions {
  n: number;
  dataPath: string;
  store: StoreTarget;
  /** Whether the stores are opened with `vectorDimensions` (else the first embedding fixes it). */
  vectorDimensions: boolean;
  /** Milliseconds the embedder waits before answering each call (0: answers at once). */
  embedLatencyMs: number;
  progress?: (line: string) => void;
}

export interface ModeFigures {
  records: number;
  ms: number;
  perSec: number;
}

export interface RememberBenchResult {
  bench: 'remember';
  store: StoreTarget['kind'];
  n: number;
  vectorDimensions: boolean;
  embedLatencyMs: number;
  sequential: ModeFigures;
  concurrent: ModeFigures;
  batch: ModeFigures;
  raw: RawFigures & { sequentialPerSec: number; batchPerSec: number };
  /** Hash-embedding throughput alone (texts per second), measured while preparing the raw rows. */
  embedPerSec: number;
  storeInfo: Record<string, string>;
  totalMs: number;
  machine: MachineInfo;
  data: Workload['data'];
}

const perSec = (records: number, ms: number) => (ms > 0 ? (records * 1000) / ms : 0);

/**
 * Measures mnemo's write throughput in three modes, each in a fresh store,
 * then the raw-driver baselines; see the README.
 */
export async function runRememberBench(
  options: RememberBenchOptions,
): Promise<RememberBenchResult> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const workload = await loadWorkload(options.dataPath);
  const texts = makeTexts(workload.turns, options.n);
  progress(
    `data: ${workload.data.path} — ${workload.turns.length} turns, ${options.n} records (turns repeated, suffix " #<i>")`,
  );
  const storeInfo: Record<string, string> =
    options.store.kind === 'postgres'
      ? { serverVersion: await postgresVersion(options.store.url) }
      : {};

  const sequentialRecords = Math.min(options.n, SEQUENTIAL_LIMIT);
  const sequential = await inFreshEngine(options, 'sequential', progress, async (handle, read) => {
    const t0 = performance.now();
    const results: RememberResult[] = [];
    for (let i = 0; i < sequentialRecords; i += 1) {
      results.push(await handle.remember({ content: texts[i] as string }));
    }
    await read();
    return { ms: performance.now() - t0, results };
  });
  const concurrent = await inFreshEngine(options, 'concurrent', progress, async (handle, read) => {
    const results: RememberResult[] = new Array(options.n);
    let next = 0;
    const worker = async () => {
      while (next < options.n) {
        const i = next;
        next += 1;
        results[i] = await handle.remember({ content: texts[i] as string });
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, options.n) }, worker));
    await read();
    return { ms: performance.now() - t0, results };
  });
  const batch = await inFreshEngine(options, 'batch', progress, async (handle, read) => {
    const results: RememberResult[] = [];
    const t0 = performance.now();
    for (let start = 0; start < options.n; start += BATCH_SIZE) {
      const chunk = texts.slice(start, start + BATCH_SIZE).map((content) => ({ content }));
      results.push(...(await handle.rememberMany(chunk)));
    }
    await read();
    return { ms: performance.now() - t0, results };
  });

  // The raw rows carry the same vectors; embedding them is timed apart.
  const embedder = createHashEmbedder({ dimensions: DIMENSIONS });
  const t0 = performance.now();
  const vectors: Float32Array[] = [];
  for (let start = 0; start < texts.length; start += BATCH_SIZE) {
    vectors.push(...(await embedder.embed(texts.slice(start, start + BATCH_SIZE))));
  }
  const embedMs = performance.now() - t0;
  embedder.calls.length = 0;
  const raw = await runRawBaselines(options.store, { texts, vectors }, SEQUENTIAL_LIMIT, progress);

  return {
    bench: 'remember',
    store: options.store.kind,
    n: options.n,
    vectorDimensions: options.vectorDimensions,
    embedLatencyMs: options.embedLatencyMs,
    sequential: { ...sequential, perSec: perSec(sequential.records, sequential.ms) },
    concurrent: { ...concurrent, perSec: perSec(concurrent.records, concurrent.ms) },
    batch: { ...batch, perSec: perSec(batch.records, batch.ms) },
    raw: {
      ...raw,
      sequentialPerSec: perSec(raw.sequentialRows, raw.sequentialMs),
      batchPerSec: perSec(raw.batchRows, raw.batchMs),
    },
    embedPerSec: perSec(texts.length, embedMs),
    storeInfo,
    totalMs: performance.now() - started,
    machine: machineInfo(),
    data: workload.data,
  };
}

/**
 * Runs `write` against a new engine on a fresh store (hash embedder, 384 d),
 * checks that every result is a new record and that the store then holds
 * exactly that many records, and removes the store (also on failure).
 * `write` gets a read of the store (its audit heads) to make last in its
 * timed part: a read waits until every acknowledged write is in the database
 * (the DuckDB store acknowledges from its journal and applies it a little
 * later), so each mode's time covers that too.
 */
async function inFreshEngine(
  { store: target, vectorDimensions, embedLatencyMs }: RememberBenchOptions,
  mode: string,
  progress: (line: string) => void,
  write: (
    handle: MemoryHandle,
    read: () => Promise<unknown>,
  ) => Promise<{ ms: number; results: RememberResult[] }>,
): Promise<{ records: number; ms: number }> {
  const fresh = await createFreshStore(target, vectorDimensions ? DIMENSIONS : undefined);
  const engine = createEngine({
    store: fresh.store,
    embedder: delayedEmbedder(createHashEmbedder({ dimensions: DIMENSIONS }), embedLatencyMs),
  });
  return usingStore(
    { close: () => engine.close(), dispose: () => fresh.dispose() },
    progress,
    async () => {
      await engine.init();
      const { ms, results } = await write(engine.as(AGENT), () => fresh.store.auditHeads());
      const ids = new Set(results.map((r) => r.id));
      const deduplicated = results.filter((r) => r.deduplicated).length;
      if (deduplicated > 0 || ids.size !== results.length) {
        throw new Error(`${mode}: ${deduplicated} of ${results.length} writes were deduplicated`);
      }
      const stored = await countRecords(fresh.store);
      if (stored !== results.length) {
        throw new Error(`${mode}: wrote ${results.length} records but the store holds ${stored}`);
      }
      progress(
        `[${mode}] ${results.length} records in ${ms.toFixed(0)} ms (${perSec(results.length, ms).toFixed(0)}/s); store holds ${stored}`,
      );
      return { records: results.length, ms };
    },
  );
}

/** `embedder`, answering each call `ms` later (as a model server would); itself when `ms` is 0. */
function delayedEmbedder(embedder: Embedder, ms: number): Embedder {
  if (ms === 0) return embedder;
  return {
    ...embedder,
    embed: async (texts) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return embedder.embed(texts);
    },
  };
}
