import { performance } from 'node:perf_hooks';
import {
  type Clock,
  createEngine,
  isPlanRecord,
  type MemoryHandle,
  type MemoryStore,
  PLAN_METADATA_KEY,
} from '@mnemo/core';
import {
  jaccard,
  recallPlan,
  rememberPlan,
  type SignatureStrategy,
  signatureTokens,
} from '@mnemo/experience';
import {
  type DataFileInfo,
  dataFileInfo,
  type MachineInfo,
  machineInfo,
} from '../shared/machine.js';
import { median, percentile } from '../shared/stats.js';
import {
  createFreshStore,
  postgresVersion,
  type StoreTarget,
  usingStore,
} from '../shared/stores.js';
import { type LabelledUtterance, loadClincFile } from './loader.js';
import { recommend, THRESHOLDS, type ThresholdRow, thresholdRow } from './metrics.js';

/** `rememberPlan` calls in flight while the plans are written (group commit shares their transactions). */
export const WRITE_CONCURRENCY = 32;
/** Every plan is a success with this score, so ties are broken by age alone. */
export const OUTCOME_SCORE = 1;
/** The agent every plan belongs to and every query is asked as. */
export const AGENT = 'bench-replay';
/** The threshold the plain baseline is quoted at: the experience tier's default. */
export const BASELINE_THRESHOLD = 0.7;

export interface ReplayBenchOptions {
  dataPath: string;
  signature: SignatureStrategy;
  store: StoreTarget;
  /** Ask every `sample`-th query through `recallPlan` (1 = every query). */
  sample: number;
  progress?: (line: string) => void;
}

export interface ReplayBenchResult {
  bench: 'replay';
  signature: SignatureStrategy;
  store: StoreTarget['kind'];
  queries: number;
  inScopeQueries: number;
  oosQueries: number;
  plans: { train: number; stored: number; deduplicated: number; emptySignature: number };
  rows: ThresholdRow[];
  recommended: ThresholdRow | null;
  /** The default signature scored in-process over the same plans and queries (a brute-force scan). */
  baseline: { atDefault: ThresholdRow; recommended: ThresholdRow | null; rows: ThresholdRow[] };
  /** Queries asked through `recallPlan`, and how many of its answers differ from the scan's. */
  exactness: { checked: number; mismatches: number; sample: number };
  timing: {
    rememberMs: number;
    plansPerSec: number;
    recallMs: number;
    recallP50Ms: number;
    recallP95Ms: number;
  };
  storeInfo: Record<string, string>;
  totalMs: number;
  machine: MachineInfo;
  data: DataFileInfo & { train: number; test: number; oosTest: number };
}

/**
 * A clock that moves 1 ms forward at every reading, from a fixed start.
 * `rememberPlan` reads the clock before its first await, so plans get
 * strictly increasing `createdAt` in the order of `train`, whatever the
 * concurrency: ties in similarity (all plans score the same) then go to the
 * later line of the file, the same on every run.
 */
function tickingClock(start = Date.parse('2026-01-01T00:00:00.000Z')): Clock {
  let ticks = 0;
  return { now: () => new Date(start + ticks++) };
}

/**
 * Remembers every `train` utterance as a successful plan, asks every `test`
 * and `oos_test` utterance once through `recallPlan` at the lowest threshold
 * (0.3), and scores every threshold from that answer — see the README. Uses
 * a fresh store, removed afterwards (also on failure and on Ctrl-C).
 */
export async function runReplayBench(options: ReplayBenchOptions): Promise<ReplayBenchResult> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const data = await loadClincFile(options.dataPath);
  const info = await dataFileInfo(options.dataPath);
  progress(
    `data: ${info.path} — train ${data.train.length}, test ${data.test.length}, oos_test ${data.oosTest.length}; signature ${options.signature}`,
  );
  const storeInfo: Record<string, string> =
    options.store.kind === 'postgres'
      ? { serverVersion: await postgresVersion(options.store.url) }
      : {};

  const fresh = await createFreshStore(options.store);
  const engine = createEngine({
    store: fresh.store,
    clock: tickingClock(),
    experienceMemory: true,
    experienceSignature: options.signature,
    // Replays are read-only here; their audit events would only add a write per query.
    readAuditing: false,
  });
  const held = { close: () => engine.close(), dispose: () => fresh.dispose() };
  const { written, queries, stored, scan, asked } = await usingStore(held, progress, async () => {
    await engine.init();
    const agent = engine.as(AGENT);
    const written = await writePlans(agent, data.train, progress);
    const queries = [
      ...data.test.map((q) => ({ ...q, inScope: true })),
      ...data.oosTest.map((q) => ({ ...q, inScope: false })),
    ];
    const stored = await readStoredPlans(fresh.store, written.labels);
    const scan = bruteForce(
      queries.map((q) => q.utterance),
      options.signature,
      stored,
    );
    const asked = await askQueries(agent, queries, options.sample, progress);
    return { written, queries, stored, scan, asked };
  });

  const lowest = THRESHOLDS[0] as number;
  let mismatches = 0;
  for (const { index, id, similarity } of asked.answers) {
    const expected = scan[index] as BruteForceAnswer;
    const reachable = expected.similarity >= lowest;
    if (
      (reachable ? expected.id : null) !== id ||
      (reachable ? expected.similarity : null) !== similarity
    ) {
      mismatches += 1;
    }
  }
  if (mismatches > 0) {
    progress(`warning: ${mismatches} recallPlan answers differ from the exact scan`);
  }
  const outcomes = scan.map((answer, i) => ({
    label: queries[i]?.inScope ? (queries[i]?.label ?? null) : null,
    similarity: answer.similarity >= lowest ? answer.similarity : null,
    planLabel: answer.label,
  }));
  const rows = THRESHOLDS.map((t) => thresholdRow(outcomes, t));
  // Every train line, as a plain Jaccard-over-default-signatures cache would hold them.
  const everyLine = data.train.map(({ utterance, label }, i) => ({
    id: String(i),
    label,
    tokens: signatureTokens(utterance, 'default'),
  }));
  const baselineOutcomes = bruteForce(
    queries.map((q) => q.utterance),
    'default',
    everyLine,
  ).map((answer, i) => ({
    label: outcomes[i]?.label ?? null,
    similarity: answer.similarity > 0 ? answer.similarity : null,
    planLabel: answer.label,
  }));
  const baselineRows = THRESHOLDS.map((t) => thresholdRow(baselineOutcomes, t));
  return {
    bench: 'replay',
    signature: options.signature,
    store: options.store.kind,
    queries: queries.length,
    inScopeQueries: data.test.length,
    oosQueries: data.oosTest.length,
    plans: {
      train: data.train.length,
      stored: stored.length,
      deduplicated: written.deduplicated,
      emptySignature: written.emptySignature,
    },
    rows,
    recommended: recommend(rows),
    baseline: {
      atDefault: thresholdRow(baselineOutcomes, BASELINE_THRESHOLD),
      recommended: recommend(baselineRows),
      rows: baselineRows,
    },
    exactness: { checked: asked.answers.length, mismatches, sample: options.sample },
    timing: {
      rememberMs: written.ms,
      plansPerSec: written.ms > 0 ? (data.train.length * 1000) / written.ms : 0,
      recallMs: asked.ms,
      recallP50Ms: asked.latencies.length === 0 ? 0 : median(asked.latencies),
      recallP95Ms: asked.latencies.length === 0 ? 0 : percentile(asked.latencies, 95),
    },
    storeInfo,
    totalMs: performance.now() - started,
    machine: machineInfo(),
    data: {
      ...info,
      train: data.train.length,
      test: data.test.length,
      oosTest: data.oosTest.length,
    },
  };
}

async function writePlans(
  agent: MemoryHandle,
  train: readonly LabelledUtterance[],
  progress: (line: string) => void,
): Promise<{
  ms: number;
  labels: Map<string, string>;
  deduplicated: number;
  emptySignature: number;
}> {
  const ids: (string | null)[] = new Array(train.length).fill(null);
  let emptySignature = 0;
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < train.length) {
      const i = next;
      next += 1;
      const { utterance, label } = train[i] as LabelledUtterance;
      const result = await rememberPlan(agent, {
        query: utterance,
        steps: [`answer:${label}`],
        chunkIds: [],
        outcomeScore: OUTCOME_SCORE,
      });
      if (result.reason === 'empty_signature') emptySignature += 1;
      ids[i] = result.id;
      done += 1;
      if (done % 2500 === 0) progress(`[remember] ${done} / ${train.length}`);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(WRITE_CONCURRENCY, train.length) }, worker));
  const ms = performance.now() - t0;
  const labels = new Map<string, string>();
  let deduplicated = 0;
  for (const [i, id] of ids.entries()) {
    if (id === null) continue;
    const { label } = train[i] as LabelledUtterance;
    const known = labels.get(id);
    if (known === undefined) {
      labels.set(id, label);
    } else {
      // Same owner, scope, text and payload (so the same label): one plan.
      if (known !== label) throw new Error(`plan ${id} was returned for two labels`);
      deduplicated += 1;
    }
  }
  progress(
    `[remember] ${labels.size} plans stored (${deduplicated} deduplicated, ${emptySignature} without a signature) in ${(ms / 1000).toFixed(1)} s`,
  );
  return { ms, labels, deduplicated, emptySignature };
}

/** A plan as the store holds it: id, label, the signature tokens it was indexed under. */
interface StoredPlan {
  id: string;
  label: string;
  tokens: readonly string[];
}

/**
 * Every plan of the store with the signature tokens the store indexed, oldest
 * first (`createdAt`, then id: the engine's order for ties), read back
 * through `scanRecords`.
 */
async function readStoredPlans(
  store: MemoryStore,
  labels: ReadonlyMap<string, string>,
): Promise<StoredPlan[]> {
  const plans: { plan: StoredPlan; at: number }[] = [];
  let afterId: string | undefined;
  for (;;) {
    const page = await store.scanRecords({
      ...(afterId === undefined ? {} : { afterId }),
      limit: 5000,
    });
    for (const record of page) {
      const payload = record.metadata[PLAN_METADATA_KEY];
      if (!isPlanRecord(record) || typeof payload !== 'object' || payload === null) continue;
      const tokens = (payload as { signature_tokens?: unknown }).signature_tokens;
      if (!Array.isArray(tokens)) continue;
      const label = labels.get(record.id);
      if (label === undefined)
        throw new Error(`the store holds plan ${record.id}, which this run did not write`);
      plans.push({
        plan: { id: record.id, label, tokens: tokens as string[] },
        at: record.createdAt.getTime(),
      });
    }
    if (page.length < 5000) break;
    afterId = page[page.length - 1]?.id;
  }
  if (plans.length !== labels.size) {
    throw new Error(`wrote ${labels.size} plans but the store holds ${plans.length}`);
  }
  plans.sort((a, b) => a.at - b.at || (a.plan.id < b.plan.id ? -1 : a.plan.id > b.plan.id ? 1 : 0));
  return plans.map(({ plan }) => plan);
}

/** Asks every `sample`-th query through `recallPlan` at the lowest threshold, timing each call. */
async function askQueries(
  agent: MemoryHandle,
  queries: readonly LabelledUtterance[],
  sample: number,
  progress: (line: string) => void,
): Promise<{
  answers: { index: number; id: string | null; similarity: number | null }[];
  latencies: number[];
  ms: number;
}> {
  const answers: { index: number; id: string | null; similarity: number | null }[] = [];
  const latencies: number[] = [];
  const lowest = THRESHOLDS[0] as number;
  const total = Math.ceil(queries.length / sample);
  const t0 = performance.now();
  for (let index = 0; index < queries.length; index += sample) {
    const q0 = performance.now();
    const { plan } = await recallPlan(agent, {
      query: (queries[index] as LabelledUtterance).utterance,
      similarityThreshold: lowest,
    });
    latencies.push(performance.now() - q0);
    answers.push({ index, id: plan?.id ?? null, similarity: plan?.similarity ?? null });
    if (answers.length % 250 === 0) progress(`[recallPlan] ${answers.length} / ${total}`);
  }
  return { answers, latencies, ms: performance.now() - t0 };
}

interface BruteForceAnswer {
  /** The best similarity over every plan (0 when none shares a token). */
  similarity: number;
  /** The best plan (the later one on ties, as the engine breaks them), or null. */
  id: string | null;
  label: string | null;
}

/**
 * The best plan of every query by an exact in-process scan (through an
 * inverted index) over `plans`, oldest first: Jaccard of the signatures,
 * ties to the later plan — what `recallPlan` answers when every plan has the
 * same outcome score.
 */
function bruteForce(
  queries: readonly string[],
  strategy: SignatureStrategy,
  plans: readonly StoredPlan[],
): BruteForceAnswer[] {
  const index = new Map<string, number[]>();
  for (const [i, plan] of plans.entries()) {
    for (const token of plan.tokens) {
      const list = index.get(token);
      if (list === undefined) index.set(token, [i]);
      else list.push(i);
    }
  }
  return queries.map((query) => {
    const tokens = signatureTokens(query, strategy);
    const candidates = new Set<number>();
    for (const token of tokens) for (const i of index.get(token) ?? []) candidates.add(i);
    let best = -1;
    let similarity = 0;
    for (const i of candidates) {
      const s = jaccard(tokens, (plans[i] as StoredPlan).tokens);
      if (s > similarity || (s === similarity && i > best)) {
        similarity = s;
        best = i;
      }
    }
    const plan = best < 0 ? null : (plans[best] as StoredPlan);
    return { similarity, id: plan?.id ?? null, label: plan?.label ?? null };
  });
}
