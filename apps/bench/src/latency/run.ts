import { performance } from 'node:perf_hooks';
import { createEngine, type MemoryType, type RecallInput } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import { Bm25Index } from '../recall/baseline-bm25.js';
import { type MachineInfo, machineInfo } from '../shared/machine.js';
import { percentile } from '../shared/stats.js';
import {
  countRecords,
  createFreshStore,
  postgresVersion,
  type StoreTarget,
  usingStore,
} from '../shared/stores.js';
import { loadWorkload, makeTexts, spread, type Workload } from '../shared/workload.js';

export const DIMENSIONS = 384;
/** Timed recalls per lane. */
export const QUERIES = 200;
/** Untimed recalls per lane before the timed ones. */
export const WARMUP = 5;
export const LIMIT = 10;
export const LOAD_BATCH = 1000;
export const AGENT = 'bench-reader';
/** The timed lanes: each strategy without filters, then lexical with a broad filter and with a tag. */
export const LATENCY_LANES = [
  'lexical',
  'semantic',
  'hybrid',
  'lexicalFiltered',
  'lexicalTagged',
] as const;
export type LatencyLane = (typeof LATENCY_LANES)[number];
/** The memory types the loaded records take in turn. */
export const LOADED_MEMORY_TYPES: readonly MemoryType[] = ['episodic', 'semantic', 'procedural'];
/**
 * The filter of `lexicalFiltered`: two of the three loaded types, so two records
 * in three pass it, as a filter on a type or a tag an agent uses often does.
 * BM25's statistics are then those of the records that pass.
 */
export const BROAD_FILTER = {
  memoryTypes: ['episodic', 'semantic'],
} satisfies RecallInput['filters'];
/** The loaded records carry the tags `topic-0` … `topic-<n - 1>` in turn, one each. */
export const LOADED_TOPICS = 10;
/** The filter of `lexicalTagged`: one tag, so one record in ten passes it. */
export const TAG_FILTER = { tagsAny: ['topic-0'] } satisfies RecallInput['filters'];

const LANE_RECALLS: Record<LatencyLane, Omit<RecallInput, 'query'>> = {
  lexical: { strategy: 'lexical' },
  semantic: { strategy: 'semantic' },
  hybrid: { strategy: 'hybrid' },
  lexicalFiltered: { strategy: 'lexical', filters: BROAD_FILTER },
  lexicalTagged: { strategy: 'lexical', filters: TAG_FILTER },
};

export interface LatencyBenchOptions {
  records: number;
  dataPath: string;
  store: StoreTarget;
  /** Timed recalls per lane (default 200). */
  queries?: number;
  progress?: (line: string) => void;
}

export interface Latencies {
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
  maxMs: number;
}

export interface LatencyBenchResult {
  bench: 'latency';
  store: StoreTarget['kind'];
  records: number;
  queries: number;
  /** Per lane; `firstMs` is that lane's first recall on the reopened store, not in the percentiles. */
  strategies: Record<LatencyLane, Latencies & { meanHits: number; firstMs: number }>;
  baseline: Latencies & { name: 'bm25-inprocess'; buildMs: number };
  /** `initMs`: the reopened store's `init()`, which on PostgreSQL loads its caches (see `FreshStore.reopen`). */
  load: { records: number; ms: number; storedRecords: number; initMs: number };
  storeInfo: Record<string, string>;
  totalMs: number;
  machine: MachineInfo;
  data: Workload['data'];
}

function summarizeTimes(times: readonly number[]): Latencies {
  return {
    p50Ms: percentile(times, 50),
    p95Ms: percentile(times, 95),
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    maxMs: Math.max(...times),
  };
}

/**
 * Loads `records` records into a fresh store with `rememberMany` (chunks of
 * 1,000, hash embedder 384 d, one agent, the memory types and topic tags in turn), reopens
 * it, then times `queries` recalls per lane with LoCoMo questions, and the in-process BM25
 * baseline over the same texts with the same questions.
 */
export async function runLatencyBench(options: LatencyBenchOptions): Promise<LatencyBenchResult> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const queries = options.queries ?? QUERIES;
  const workload = await loadWorkload(options.dataPath);
  const texts = makeTexts(workload.turns, options.records);
  const questions = spread(workload.questions, queries);
  const warmup = spread([...workload.questions].reverse(), WARMUP);
  progress(
    `data: ${workload.data.path} — ${workload.turns.length} turns → ${options.records} records; ${queries} of ${workload.questions.length} questions`,
  );
  const { store } = options;
  const storeInfo: Record<string, string> =
    store.kind === 'postgres'
      ? {
          serverVersion: await postgresVersion(store.url),
          ...(store.lexicalIndex && { lexicalIndex: store.lexicalIndex }),
          ...(store.vectorIndex && { vectorIndex: store.vectorIndex }),
        }
      : {};

  // The baseline first: it needs nothing but the texts.
  const b0 = performance.now();
  const index = new Bm25Index(texts.map((text, i) => ({ id: String(i), text })));
  const buildMs = performance.now() - b0;
  for (const q of warmup) index.search(q, LIMIT);
  const baselineTimes = questions.map((q) => {
    const t0 = performance.now();
    index.search(q, LIMIT);
    return performance.now() - t0;
  });
  progress(
    `[baseline] BM25 in-process over ${texts.length} texts: built in ${buildMs.toFixed(0)} ms, p50 ${percentile(baselineTimes, 50).toFixed(2)} ms`,
  );

  const fresh = await createFreshStore(options.store, DIMENSIONS);
  const embedder = createHashEmbedder({ dimensions: DIMENSIONS });
  let engine = createEngine({ store: fresh.store, embedder });
  const held = { close: () => engine.close(), dispose: () => fresh.dispose() };
  return usingStore<LatencyBenchResult>(held, progress, async () => {
    await engine.init();
    const loader = engine.as(AGENT);
    const l0 = performance.now();
    let written = 0;
    for (let start = 0; start < texts.length; start += LOAD_BATCH) {
      const results = await loader.rememberMany(
        texts.slice(start, start + LOAD_BATCH).map((content, i) => ({
          content,
          memoryType: LOADED_MEMORY_TYPES[(start + i) % LOADED_MEMORY_TYPES.length],
          tags: [`topic-${(start + i) % LOADED_TOPICS}`],
        })),
      );
      written += results.filter((r) => !r.deduplicated).length;
      if ((start / LOAD_BATCH) % 10 === 9 || start + LOAD_BATCH >= texts.length) {
        progress(
          `[load] ${written}/${texts.length} records, ${((performance.now() - l0) / 1000).toFixed(1)} s`,
        );
      }
    }
    const loadMs = performance.now() - l0;
    const storedRecords = await countRecords(fresh.store);
    if (storedRecords !== options.records || written !== options.records) {
      throw new Error(
        `loaded ${options.records} texts, ${written} new records, but the store holds ${storedRecords}`,
      );
    }
    await fresh.settle();
    // The recalls run in a store opened after the load, as in a process started later: they
    // read what the file or server holds, not the loading store's in-memory state (DuckDB
    // keeps rows it has not checkpointed in memory, as written).
    await engine.close();
    engine = createEngine({ store: fresh.reopen(), embedder });
    // On PostgreSQL, init() loads the caches (see `FreshStore.reopen`), so that every timed
    // recall is of the steady state.
    const i0 = performance.now();
    await engine.init();
    const initMs = performance.now() - i0;
    const handle = engine.as(AGENT);

    const strategies = {} as LatencyBenchResult['strategies'];
    for (const lane of LATENCY_LANES) {
      let firstMs = 0;
      // The first recall of a lane pays what the store loads on first use (DuckDB's
      // lexical index; PostgreSQL's caches are loaded already); it is reported apart, not
      // among the timed ones.
      const f0 = performance.now();
      for (const [i, query] of warmup.entries()) {
        await handle.recall({ query, ...LANE_RECALLS[lane], limit: LIMIT });
        if (i === 0) firstMs = performance.now() - f0;
      }
      const times: number[] = [];
      let hits = 0;
      for (const query of questions) {
        const t0 = performance.now();
        const result = await handle.recall({ query, ...LANE_RECALLS[lane], limit: LIMIT });
        times.push(performance.now() - t0);
        hits += result.hits.length;
      }
      strategies[lane] = {
        ...summarizeTimes(times),
        meanHits: hits / questions.length,
        firstMs,
      };
      progress(
        `[${lane}] ${times.length} recalls: p50 ${strategies[lane].p50Ms.toFixed(2)} ms, p95 ${strategies[lane].p95Ms.toFixed(2)} ms (first recall ${firstMs.toFixed(0)} ms)`,
      );
    }
    return {
      bench: 'latency',
      store: options.store.kind,
      records: options.records,
      queries,
      strategies,
      baseline: { name: 'bm25-inprocess', ...summarizeTimes(baselineTimes), buildMs },
      load: { records: written, ms: loadMs, storedRecords, initMs },
      storeInfo,
      totalMs: performance.now() - started,
      machine: machineInfo(),
      data: workload.data,
    };
  });
}
