import type { MemoryHandle } from '@mnemo/core';
import {
  type CachedPlan,
  DEFAULT_SUCCESS_THRESHOLD,
  recallPlan,
  rememberPlan,
  reportPlanOutcome,
} from '@mnemo/experience';
import { replayPlan } from './replay.js';
import { scoreOutcome } from './scorer.js';

/** How many chunks the retrieval step fetches. */
export const RETRIEVAL_LIMIT = 5;
/** The one step of a retrieval plan, as cached and replayed. */
export const RETRIEVAL_STEP = `recall:lexical:limit=${RETRIEVAL_LIMIT}`;

/** What happened to one question. */
export type QuestionOutcome = ReplayOutcome | RetrievalOutcome;

interface OutcomeBase {
  question: string;
  /** Ids of the chunks the answer is built from, best first. */
  chunkIds: string[];
  /** `scoreOutcome(question, chunks)`. */
  score: number;
  /** Milliseconds from the plan lookup to the chunks in hand (on a miss: scored and the plan cached too). */
  latencyMs: number;
  /** Of those, milliseconds spent in `recallPlan`. */
  lookupMs: number;
  /** Plans the lookup skipped because poor replays had retired them (see `reportPlanOutcome`). */
  retiredSkipped: number;
  /** Plans the lookup skipped because a chunk they name changed or is gone. */
  staleSkipped: number;
}

/** A plan hit: the cached plan's chunks were fetched by id, no retrieval ran. */
export interface ReplayOutcome extends OutcomeBase {
  path: 'replay';
  planId: string;
  /** The question the plan was cached for. */
  planQuery: string;
  /** Jaccard similarity of the two questions' signatures. */
  similarity: number;
  /** The replayed chunks score below the success threshold on this question. */
  wrong: boolean;
  /** Chunk ids of the plan that no longer exist. */
  missing: string[];
  /** The plan's running outcome after this replay's score was reported. */
  runningOutcome: number;
  /** This replay's report took the running outcome below the success threshold: the plan is not replayed again. */
  retired: boolean;
}

/** A miss: retrieval ran, its outcome was scored and offered to `rememberPlan`. */
export interface RetrievalOutcome extends OutcomeBase {
  path: 'retrieval';
  /** The cached plan's id, or null when the score was too low to cache. */
  planId: string | null;
  /**
   * `rememberPlan` found the identical plan cached already and wrote nothing:
   * `planId` is that plan's, which the lookup skipped (retired or stale), so it
   * stays unreplayable.
   */
  deduplicated: boolean;
}

export interface AgentLoopOptions {
  /** Passed to `recallPlan`. */
  similarityThreshold: number;
  /** Called after each question with its outcome, its index (0-based) and the number of questions. */
  onOutcome?: (outcome: QuestionOutcome, index: number, total: number) => void;
  /** Milliseconds from an arbitrary origin, read three times per question; default `performance.now`. */
  now?: () => number;
}

/**
 * The agent loop: for each question, look for a cached plan first. On a hit,
 * replay it (fetch its chunks by id), score the replay and report the score
 * with `reportPlanOutcome`: a plan whose running outcome falls below
 * `DEFAULT_SUCCESS_THRESHOLD` is not replayed again. On a miss, run retrieval
 * (lexical recall of `RETRIEVAL_LIMIT` chunks), score the outcome, and cache
 * the plan with `rememberPlan`, which keeps it only when the score reaches
 * `DEFAULT_SUCCESS_THRESHOLD`. Questions run one after another, so a question
 * can hit the plan an earlier one cached.
 */
export async function runAgentLoop(
  handle: MemoryHandle,
  questions: readonly string[],
  options: AgentLoopOptions,
): Promise<QuestionOutcome[]> {
  const now = options.now ?? (() => performance.now());
  const outcomes: QuestionOutcome[] = [];
  for (const [index, question] of questions.entries()) {
    const started = now();
    const { plan, retired, stale } = await recallPlan(handle, {
      query: question,
      similarityThreshold: options.similarityThreshold,
    });
    const timing = {
      lookupMs: now() - started,
      elapsed: () => now() - started,
      retiredSkipped: retired,
      staleSkipped: stale,
    };
    const outcome =
      plan === null
        ? await retrieve(handle, question, timing)
        : await replay(handle, question, plan, timing);
    outcomes.push(outcome);
    options.onOutcome?.(outcome, index, questions.length);
  }
  return outcomes;
}

interface Timing {
  /** Milliseconds the plan lookup took. */
  lookupMs: number;
  /** Milliseconds since the question started. */
  elapsed: () => number;
  retiredSkipped: number;
  staleSkipped: number;
}

/** The cached path: fetch the plan's chunks by id; no retrieval runs. */
async function replay(
  handle: MemoryHandle,
  question: string,
  plan: CachedPlan,
  timing: Timing,
): Promise<ReplayOutcome> {
  const { records, missing } = await replayPlan(handle, plan.chunkIds);
  // Scoring a replay is the demo's check on the cache, not work the agent does: not timed.
  const latencyMs = timing.elapsed();
  const score = scoreOutcome(
    question,
    records.map((record) => record.content),
  );
  // Every replay's score goes back to the plan: poor replays retire it.
  const reported = await reportPlanOutcome(handle, { planId: plan.id, outcomeScore: score });
  return {
    path: 'replay',
    question,
    chunkIds: records.map((record) => record.id),
    score,
    latencyMs,
    lookupMs: timing.lookupMs,
    retiredSkipped: timing.retiredSkipped,
    staleSkipped: timing.staleSkipped,
    planId: plan.id,
    planQuery: plan.query,
    similarity: plan.similarity,
    wrong: score < DEFAULT_SUCCESS_THRESHOLD,
    missing,
    runningOutcome: reported.runningOutcome,
    retired: !reported.replayable,
  };
}

/** The retrieval path: lexical recall, score the outcome, offer the plan to the cache. */
async function retrieve(
  handle: MemoryHandle,
  question: string,
  timing: Timing,
): Promise<RetrievalOutcome> {
  const { hits } = await handle.recall({
    query: question,
    strategy: 'lexical',
    limit: RETRIEVAL_LIMIT,
  });
  const chunkIds = hits.map((hit) => hit.record.id);
  const score = scoreOutcome(
    question,
    hits.map((hit) => hit.record.content),
  );
  // rememberPlan stores nothing (id null) when the score is below DEFAULT_SUCCESS_THRESHOLD.
  const cached = await rememberPlan(handle, {
    query: question,
    steps: [RETRIEVAL_STEP],
    chunkIds,
    outcomeScore: score,
  });
  const latencyMs = timing.elapsed();
  return {
    path: 'retrieval',
    question,
    chunkIds,
    score,
    latencyMs,
    lookupMs: timing.lookupMs,
    retiredSkipped: timing.retiredSkipped,
    staleSkipped: timing.staleSkipped,
    planId: cached.id,
    deduplicated: cached.deduplicated === true,
  };
}
