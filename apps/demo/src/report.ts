import type { AuditVerification } from '@mnemo/core';
import type { QuestionOutcome } from './agent-loop.js';

/** Everything the demo reports; `--json` prints exactly this object. */
export interface DemoReport {
  corpus: {
    /** 'default', or the folder given with --corpus. */
    source: string;
    files: number;
    chunks: number;
    /** Chunks whose text an existing record already held (with --keep: all of them). */
    deduplicatedChunks: number;
  };
  database: ReportDatabase;
  agent: string;
  similarityThreshold: number;
  questions: number;
  planHits: number;
  planMisses: number;
  /** planHits / questions. */
  hitRate: number;
  /** Misses whose outcome scored high enough to be cached, and was written as a new plan. */
  plansCached: number;
  /**
   * Misses whose outcome was the plan cached already (same question, chunks
   * and score): nothing written, and that plan, retired or stale, stays
   * unreplayable.
   */
  plansDeduplicated: number;
  /** Misses whose outcome scored below the success threshold: nothing cached. */
  plansNotCached: number;
  retrievalCalls: { made: number; saved: number };
  /**
   * Mean milliseconds per question on each path (null when no question took
   * it), and of the plan lookup alone, which both paths start with.
   */
  meanLatencyMs: { planHit: number | null; retrieval: number | null; planLookup: number | null };
  /** Replays whose chunks score below the success threshold on the new question. */
  wrongReplays: number;
  /** Replays whose reported score took the plan's running outcome below the success threshold. */
  plansRetired: number;
  /** Plan lookups that skipped a retired plan (and so ran retrieval or replayed another plan). */
  retiredPlansSkipped: number;
  /** Plan lookups that skipped a plan whose chunks changed or are gone. */
  stalePlansSkipped: number;
  /** Chunk ids of replayed plans that no longer existed. */
  missingReplayedChunks: number;
  audit: { ok: boolean; events: number; chains: number };
}

/** The store the run used; `kept` when it reused an earlier run's data (`--keep`). */
export type ReportDatabase =
  | {
      store: 'duckdb' /** As given: relative to the cwd, or ':memory:'. */;
      path: string;
      kept: boolean;
    }
  | {
      store: 'postgres';
      /** The connection URL with its password masked. */
      url: string;
      schema: string;
      kept: boolean;
    };

export interface ReportInput {
  corpus: DemoReport['corpus'];
  database: DemoReport['database'];
  agent: string;
  similarityThreshold: number;
  outcomes: readonly QuestionOutcome[];
  audit: AuditVerification;
}

/** Counts and means over the loop's outcomes. */
export function buildReport(input: ReportInput): DemoReport {
  const replays = input.outcomes.filter((outcome) => outcome.path === 'replay');
  const retrievals = input.outcomes.filter((outcome) => outcome.path === 'retrieval');
  const questions = input.outcomes.length;
  return {
    corpus: input.corpus,
    database: input.database,
    agent: input.agent,
    similarityThreshold: input.similarityThreshold,
    questions,
    planHits: replays.length,
    planMisses: retrievals.length,
    hitRate: questions === 0 ? 0 : replays.length / questions,
    plansCached: retrievals.filter((outcome) => outcome.planId !== null && !outcome.deduplicated)
      .length,
    plansDeduplicated: retrievals.filter((outcome) => outcome.deduplicated).length,
    plansNotCached: retrievals.filter((outcome) => outcome.planId === null).length,
    retrievalCalls: { made: retrievals.length, saved: replays.length },
    meanLatencyMs: {
      planHit: mean(replays.map((outcome) => outcome.latencyMs)),
      retrieval: mean(retrievals.map((outcome) => outcome.latencyMs)),
      planLookup: mean(input.outcomes.map((outcome) => outcome.lookupMs)),
    },
    wrongReplays: replays.filter((outcome) => outcome.wrong).length,
    plansRetired: replays.filter((outcome) => outcome.retired).length,
    retiredPlansSkipped: input.outcomes.filter((outcome) => outcome.retiredSkipped > 0).length,
    stalePlansSkipped: input.outcomes.filter((outcome) => outcome.staleSkipped > 0).length,
    missingReplayedChunks: replays.reduce((sum, outcome) => sum + outcome.missing.length, 0),
    audit: { ok: input.audit.ok, events: input.audit.events, chains: input.audit.chains },
  };
}

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((sum, value) => sum + value, 0) / values.length;
}
