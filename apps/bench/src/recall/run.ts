import { performance } from 'node:perf_hooks';
import { createEngine, type Embedder, type Engine, noopEmbedder } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import {
  type DataFileInfo,
  dataFileInfo,
  type MachineInfo,
  machineInfo,
} from '../shared/machine.js';
import { median, percentile } from '../shared/stats.js';
import { usingStore } from '../shared/stores.js';
import { Bm25Index } from './baseline-bm25.js';
import { ingestConversation } from './ingest.js';
import { type Conversation, type LoadStats, loadLocomoFile } from './loader.js';
import { meanScores, type RetrievalScores, scoreQuestion } from './metrics.js';
import { createRunStore, type StoreChoice } from './stores.js';

export const STRATEGIES = ['lexical', 'semantic', 'hybrid'] as const;
export type Strategy = (typeof STRATEGIES)[number];
export const EMBEDDERS = ['noop', 'hash'] as const;
export type EmbedderChoice = (typeof EMBEDDERS)[number];

/** Hits asked of each recall, and the deepest k scored. */
export const RECALL_LIMIT = 10;
/** Dimensions of `--embedder hash`. */
export const HASH_DIMENSIONS = 384;

export interface RecallBenchOptions {
  dataPath: string;
  store: StoreChoice;
  strategy: Strategy;
  embedder: EmbedderChoice;
  /** Only the first N conversations of the file. */
  limitConversations?: number;
  /** Times the query phase is repeated; latencies are the median over runs. Default 1. */
  runs?: number;
  /** Progress lines (stderr in the CLI). */
  progress?: (line: string) => void;
}

/** One question's ranked turns, kept for the figures. */
interface Scored {
  category: number;
  scores: RetrievalScores;
}

export interface CategoryFigures {
  questions: number;
  recallAt10: number;
  mrr: number;
  baselineRecallAt10: number;
  baselineMrr: number;
}

/** Everything a run measured, unrounded (the CLI rounds for the JSON line). */
export interface RecallBenchResult extends RetrievalScores {
  bench: 'recall';
  store: StoreChoice['kind'];
  strategy: Strategy;
  embedder: EmbedderChoice;
  questions: number;
  p50Ms: number;
  p95Ms: number;
  baseline: RetrievalScores;
  byCategory: Record<string, CategoryFigures>;
  runs: number;
  latency: { meanMs: number; maxMs: number; perRunP50Ms: number[]; perRunP95Ms: number[] };
  /** Whether every run returned the same ranking for every question. */
  rankingsStable: boolean;
  ingest: {
    conversations: number;
    turns: number;
    records: number;
    deduplicated: number;
    ms: number;
  };
  loader: LoadStats;
  config: {
    limit: number;
    embedderDimensions: number;
    readAuditing: boolean;
    storeLocation: string;
    storeInfo: Record<string, string>;
  };
  totalMs: number;
  machine: MachineInfo;
  data: DataFileInfo & { conversationsUsed: number; conversationsInFile: number };
}

function makeEmbedder(choice: EmbedderChoice): Embedder {
  return choice === 'hash' ? createHashEmbedder({ dimensions: HASH_DIMENSIONS }) : noopEmbedder;
}

/**
 * Runs the LoCoMo retrieval benchmark: loads the file, scores the BM25
 * baseline in-process, stores every turn in a fresh store, recalls with every
 * question of categories 1–4, and removes the store again (also on failure).
 * Bad input is a `UsageError`; engine and store failures are `MnemoError`s.
 */
export async function runRecallBench(options: RecallBenchOptions): Promise<RecallBenchResult> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const runs = options.runs ?? 1;
  const { conversations: all, stats } = await loadLocomoFile(options.dataPath);
  const data = await dataFileInfo(options.dataPath);
  const conversations = all.slice(0, options.limitConversations ?? all.length);
  const questionCount = conversations.reduce((sum, c) => sum + c.questions.length, 0);
  const turnCount = conversations.reduce((sum, c) => sum + c.turns.length, 0);
  progress(
    `data: ${data.path} — ${conversations.length} of ${all.length} conversations, ${turnCount} turns, ${questionCount} questions (categories 1–4)`,
  );

  const baseline = scoreBaseline(conversations);

  const embedder = makeEmbedder(options.embedder);
  const runStore = await createRunStore(options.store, embedder.dimensions);
  const engine = createEngine({ store: runStore.store, embedder });
  const held = { close: () => engine.close(), dispose: () => runStore.dispose() };
  return usingStore(held, progress, async (): Promise<RecallBenchResult> => {
    await engine.init();
    progress(
      `store: ${options.store.kind} (${runStore.location}), strategy ${options.strategy}, embedder ${options.embedder}`,
    );
    await checkStrategy(engine, conversations, options.strategy);

    const ingestStarted = performance.now();
    const canonical = new Map<Conversation, Map<string, string>>();
    let records = 0;
    let deduplicated = 0;
    for (const [index, conversation] of conversations.entries()) {
      const t0 = performance.now();
      const result = await ingestConversation(engine.as(conversation.agentId), conversation);
      canonical.set(conversation, result.canonical);
      records += result.records;
      deduplicated += result.deduplicated;
      progress(
        `[ingest ${index + 1}/${conversations.length}] ${conversation.sampleId}: ${conversation.turns.length} turns → ${result.records} records in ${(performance.now() - t0).toFixed(0)} ms`,
      );
    }
    const ingestMs = performance.now() - ingestStarted;

    const perRun: number[][] = [];
    let firstRankings: string[][] | undefined;
    let rankingsStable = true;
    for (let run = 1; run <= runs; run += 1) {
      const latencies: number[] = [];
      const rankings: string[][] = [];
      for (const conversation of conversations) {
        const handle = engine.as(conversation.agentId);
        for (const { question } of conversation.questions) {
          const t0 = performance.now();
          const result = await handle.recall({
            query: question,
            strategy: options.strategy,
            limit: RECALL_LIMIT,
          });
          latencies.push(performance.now() - t0);
          rankings.push(result.hits.map((hit) => hitDiaId(hit.record.metadata, hit.record.id)));
        }
      }
      perRun.push(latencies);
      if (firstRankings === undefined) firstRankings = rankings;
      else if (JSON.stringify(rankings) !== JSON.stringify(firstRankings)) rankingsStable = false;
      progress(
        `[query run ${run}/${runs}] ${latencies.length} recalls: p50 ${percentileOr0(latencies, 50).toFixed(2)} ms, p95 ${percentileOr0(latencies, 95).toFixed(2)} ms`,
      );
    }

    const mnemo: Scored[] = [];
    let position = 0;
    for (const conversation of conversations) {
      const map = canonical.get(conversation) as Map<string, string>;
      for (const question of conversation.questions) {
        const ranked = (firstRankings as string[][])[position] as string[];
        position += 1;
        const gold = [...new Set(question.evidence.map((id) => map.get(id) ?? id))];
        mnemo.push({ category: question.category, scores: scoreQuestion(ranked, gold) });
      }
    }
    const storeInfo = await runStore.describe();

    const p50s = perRun.map((latencies) => percentileOr0(latencies, 50));
    const p95s = perRun.map((latencies) => percentileOr0(latencies, 95));
    const allLatencies = perRun.flat();
    return {
      bench: 'recall',
      store: options.store.kind,
      strategy: options.strategy,
      embedder: options.embedder,
      questions: mnemo.length,
      ...meanScores(mnemo.map((s) => s.scores)),
      p50Ms: median(p50s),
      p95Ms: median(p95s),
      baseline: meanScores(baseline.map((s) => s.scores)),
      byCategory: byCategory(mnemo, baseline),
      runs,
      latency: {
        meanMs:
          allLatencies.length === 0
            ? 0
            : allLatencies.reduce((a, b) => a + b, 0) / allLatencies.length,
        maxMs: allLatencies.length === 0 ? 0 : Math.max(...allLatencies),
        perRunP50Ms: p50s,
        perRunP95Ms: p95s,
      },
      rankingsStable,
      ingest: {
        conversations: conversations.length,
        turns: turnCount,
        records,
        deduplicated,
        ms: ingestMs,
      },
      loader: stats,
      config: {
        limit: RECALL_LIMIT,
        embedderDimensions: embedder.dimensions,
        readAuditing: engine.readAuditing,
        storeLocation: runStore.location,
        storeInfo,
      },
      totalMs: performance.now() - started,
      machine: machineInfo(),
      data: { ...data, conversationsUsed: conversations.length, conversationsInFile: all.length },
    };
  });
}

/** The BM25 baseline's scores for every question, in the order of the questions. */
export function scoreBaseline(conversations: readonly Conversation[]): Scored[] {
  return conversations.flatMap((conversation) => {
    const index = new Bm25Index(
      conversation.turns.map((turn) => ({ id: turn.diaId, text: turn.content })),
    );
    return conversation.questions.map((question) => ({
      category: question.category,
      scores: scoreQuestion(
        index.search(question.question, RECALL_LIMIT).map((hit) => hit.id),
        question.evidence,
      ),
    }));
  });
}

/**
 * Semantic and hybrid recall need a semantic embedder: asks the engine once,
 * before anything is stored, so the library's own `EMBEDDER_NOT_CONFIGURED`
 * error ends the run at once instead of after ingestion.
 */
async function checkStrategy(
  engine: Engine,
  conversations: readonly Conversation[],
  strategy: Strategy,
): Promise<void> {
  const first = conversations[0];
  if (strategy === 'lexical' || engine.embedder.semantic || first === undefined) return;
  await engine.as(first.agentId).recall({ query: 'strategy check', strategy, limit: 1 });
}

/** The dia_id in a hit's metadata (every record the benchmark writes has one). */
function hitDiaId(metadata: unknown, recordId: string): string {
  const value =
    typeof metadata === 'object' && metadata !== null
      ? (metadata as Record<string, unknown>).dia_id
      : undefined;
  if (typeof value !== 'string') throw new Error(`record ${recordId} has no metadata.dia_id`);
  return value;
}

function percentileOr0(values: readonly number[], p: number): number {
  return values.length === 0 ? 0 : percentile(values, p);
}

function byCategory(mnemo: readonly Scored[], baseline: readonly Scored[]) {
  const figures: Record<string, CategoryFigures> = {};
  const categories = [...new Set(mnemo.map((s) => s.category))].sort((a, b) => a - b);
  for (const category of categories) {
    const ours = meanScores(mnemo.filter((s) => s.category === category).map((s) => s.scores));
    const theirs = meanScores(baseline.filter((s) => s.category === category).map((s) => s.scores));
    figures[String(category)] = {
      questions: mnemo.filter((s) => s.category === category).length,
      recallAt10: ours.recallAt10,
      mrr: ours.mrr,
      baselineRecallAt10: theirs.recallAt10,
      baselineMrr: theirs.mrr,
    };
  }
  return figures;
}
