import { performance } from 'node:perf_hooks';
import {
  createEngine,
  type MemoryRecord,
  type MemoryStore,
  PLAN_METADATA_KEY,
  PLAN_TAG,
  type Visibility,
} from '@mnemo/core';
import {
  DEFAULT_SIMILARITY_THRESHOLD,
  recallPlan,
  rememberPlan,
  signatureTokens,
  withExperienceMemory,
} from '@mnemo/experience';
import { type MachineInfo, machineInfo } from '../shared/machine.js';
import { percentile } from '../shared/stats.js';
import {
  countRecords,
  createFreshStore,
  postgresVersion,
  type StoreTarget,
  usingStore,
} from '../shared/stores.js';
import { MAX_TOKENS, MIN_TOKENS, makePlanWorkload, VOCABULARY } from './workload.js';

/** Timed `recallPlan` calls. */
export const QUERIES = 200;
/** Untimed `recallPlan` calls first. */
export const WARMUP = 10;
/** Timed full scans (each fetches every plan): fewer, they take 100s of ms each at 100k. */
export const SCAN_QUERIES = 10;
/** `rememberPlan` calls in flight while filling (the engine's group commit batches them). */
export const FILL_CONCURRENCY = 256;
export const SEED = 20261130;
export const AGENT = 'bench-planner';
/** Embedding column size of the fresh store; plans are written with the no-op embedder. */
const DIMENSIONS = 8;

export interface PlansBenchOptions {
  plans: number;
  store: StoreTarget;
  queries?: number;
  scanQueries?: number;
  seed?: number;
  progress?: (line: string) => void;
}

export interface PlansBenchResult {
  bench: 'plans';
  store: StoreTarget['kind'];
  plans: number;
  queries: number;
  /** `recallPlan` with read auditing off: the lookup itself, as the scan measures it. */
  indexed: Latencies;
  /** The same calls with read auditing on (the default): each also commits a `recall_plan` audit event. */
  audited: Latencies;
  scan: { p50Ms: number; meanMs: number; queries: number; plansFetched: number };
  /** Every indexed answer (plan id and similarity) equals the full scan's. */
  identical: boolean;
  mismatches: number;
  hits: number;
  meanCandidates: number;
  fill: { ms: number; storedRecords: number };
  threshold: number;
  seed: number;
  storeInfo: Record<string, string>;
  totalMs: number;
  machine: MachineInfo;
}

export interface Latencies {
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
}

function latencies(times: readonly number[]): Latencies {
  return {
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    maxMs: Math.max(...times),
  };
}

interface Answer {
  id: string | null;
  similarity: number | null;
}

/** A plan as the full scan sees it. */
interface ScannedPlan {
  id: string;
  tokens: readonly string[];
  outcome: number;
  createdAt: number;
}

/** Every plan the agent can see, fetched from the store in one read: what a scan-based lookup must do per query. */
async function fetchAllPlans(store: MemoryStore, visibility: Visibility): Promise<ScannedPlan[]> {
  const visible = await store.list({
    visibility,
    filters: { tagsAll: [PLAN_TAG] },
    includePlans: true,
  });
  return visible.flatMap(({ record }) => toScanned(record));
}

function toScanned(record: MemoryRecord): ScannedPlan[] {
  const payload = record.metadata[PLAN_METADATA_KEY];
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return [];
  const tokens = payload.signature_tokens;
  const outcome = payload.outcome_score;
  if (!Array.isArray(tokens) || typeof outcome !== 'number') return [];
  return [
    {
      id: record.id,
      tokens: tokens as string[],
      outcome,
      createdAt: record.createdAt.getTime(),
    },
  ];
}

/**
 * The brute-force answer: highest Jaccard similarity ≥ threshold (the same
 * |A∩B| / |A∪B| as `jaccard`, over distinct tokens), then outcome, then
 * newest, then id.
 */
function bestByScan(plans: readonly ScannedPlan[], query: string, threshold: number): Answer {
  const tokens = new Set(signatureTokens(query));
  let best: (ScannedPlan & { similarity: number }) | null = null;
  for (const plan of plans) {
    let shared = 0;
    for (const token of plan.tokens) if (tokens.has(token)) shared += 1;
    if (shared === 0) continue;
    const similarity = shared / (tokens.size + plan.tokens.length - shared);
    if (similarity < threshold || plan.outcome < 0.5) continue;
    if (
      best === null ||
      similarity > best.similarity ||
      (similarity === best.similarity &&
        (plan.outcome > best.outcome ||
          (plan.outcome === best.outcome &&
            (plan.createdAt > best.createdAt ||
              (plan.createdAt === best.createdAt && plan.id > best.id)))))
    ) {
      best = { ...plan, similarity };
    }
  }
  return { id: best?.id ?? null, similarity: best?.similarity ?? null };
}

/**
 * Fills a fresh store with `plans` synthetic plans through `rememberPlan`,
 * then times `recallPlan` through the engine (read auditing off, then on)
 * against a full scan of every plan in the same run, and checks that every
 * indexed answer equals the scan's.
 */
export async function runPlansBench(options: PlansBenchOptions): Promise<PlansBenchResult> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const queries = options.queries ?? QUERIES;
  const scanQueries = Math.min(options.scanQueries ?? SCAN_QUERIES, queries);
  const seed = options.seed ?? SEED;
  const threshold = DEFAULT_SIMILARITY_THRESHOLD;
  const workload = makePlanWorkload(options.plans, queries + WARMUP, seed);
  progress(
    `workload: ${options.plans} plans of ${MIN_TOKENS}–${MAX_TOKENS} tokens from a Zipf vocabulary of ${VOCABULARY}, seed ${seed}`,
  );
  const storeInfo: Record<string, string> =
    options.store.kind === 'postgres'
      ? { serverVersion: await postgresVersion(options.store.url) }
      : {};

  const fresh = await createFreshStore(options.store, DIMENSIONS);
  const engine = withExperienceMemory(createEngine({ store: fresh.store }));
  const held = { close: () => engine.close(), dispose: () => fresh.dispose() };
  return usingStore<PlansBenchResult>(held, progress, async () => {
    await engine.init();
    const handle = engine.as(AGENT);

    const f0 = performance.now();
    let next = 0;
    let stored = 0;
    const worker = async () => {
      for (;;) {
        const index = next;
        next += 1;
        const plan = workload.plans[index];
        if (plan === undefined) return;
        const result = await rememberPlan(handle, {
          query: plan.query,
          steps: [`step-${index}`],
          chunkIds: [],
          outcomeScore: plan.outcomeScore,
        });
        if (result.stored) stored += 1;
        if (stored % 10_000 === 0 && result.stored) {
          progress(
            `[fill] ${stored}/${options.plans} plans, ${((performance.now() - f0) / 1000).toFixed(1)} s`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: FILL_CONCURRENCY }, worker));
    const fillMs = performance.now() - f0;
    const storedRecords = await countRecords(fresh.store);
    if (storedRecords !== options.plans) {
      throw new Error(`filled ${options.plans} plans but the store holds ${storedRecords} records`);
    }
    progress(`[fill] ${storedRecords} plans in ${(fillMs / 1000).toFixed(1)} s`);
    await fresh.settle();

    const [warmup, timed] = [workload.queries.slice(0, WARMUP), workload.queries.slice(WARMUP)];
    // The lookup alone (read auditing off), then the default engine, which also commits an
    // audit event per call: a write whose cost does not depend on the number of plans.
    const lookup = engine.with({ readAuditing: false }).as(AGENT);
    const timeCalls = async (caller: typeof handle) => {
      for (const query of warmup) await recallPlan(caller, { query });
      const times: number[] = [];
      const answers: Answer[] = [];
      let candidates = 0;
      for (const query of timed) {
        const t0 = performance.now();
        const result = await recallPlan(caller, { query });
        times.push(performance.now() - t0);
        answers.push({ id: result.plan?.id ?? null, similarity: result.plan?.similarity ?? null });
        candidates += result.candidatesConsidered;
      }
      return { times, answers, candidates };
    };
    const bare = await timeCalls(lookup);
    progress(
      `[indexed] ${timed.length} recallPlan, read auditing off: p50 ${percentile(bare.times, 50).toFixed(2)} ms, p99 ${percentile(bare.times, 99).toFixed(2)} ms`,
    );
    const audited = await timeCalls(handle);
    progress(
      `[indexed] ${timed.length} recallPlan, read auditing on: p50 ${percentile(audited.times, 50).toFixed(2)} ms, p99 ${percentile(audited.times, 99).toFixed(2)} ms`,
    );
    const indexed = bare.answers;
    const candidates = bare.candidates;

    const visibility = () => ({ agentId: AGENT, orgId: null, now: new Date() });
    const scanTimes: number[] = [];
    let plansFetched = 0;
    for (const query of timed.slice(0, scanQueries)) {
      const t0 = performance.now();
      const all = await fetchAllPlans(fresh.store, visibility());
      bestByScan(all, query, threshold);
      scanTimes.push(performance.now() - t0);
      plansFetched = all.length;
    }
    progress(
      `[scan] ${scanTimes.length} full scans: p50 ${percentile(scanTimes, 50).toFixed(1)} ms`,
    );
    // Every query's answer, from one fetch of every plan.
    const all = await fetchAllPlans(fresh.store, visibility());
    let mismatches = 0;
    timed.forEach((query, i) => {
      const expected = bestByScan(all, query, threshold);
      for (const actual of [indexed[i], audited.answers[i]] as Answer[]) {
        if (expected.id !== actual.id || expected.similarity !== actual.similarity) mismatches += 1;
      }
    });

    return {
      bench: 'plans',
      store: options.store.kind,
      plans: options.plans,
      queries: timed.length,
      indexed: latencies(bare.times),
      audited: latencies(audited.times),
      scan: {
        p50Ms: percentile(scanTimes, 50),
        meanMs: scanTimes.reduce((a, b) => a + b, 0) / scanTimes.length,
        queries: scanTimes.length,
        plansFetched,
      },
      identical: mismatches === 0,
      mismatches,
      hits: indexed.filter((answer) => answer.id !== null).length,
      meanCandidates: candidates / timed.length,
      fill: { ms: fillMs, storedRecords },
      threshold,
      seed,
      storeInfo,
      totalMs: performance.now() - started,
      machine: machineInfo(),
    };
  });
}
