import type { MemoryHandle } from '@mnemo/core';
import { DEFAULT_SUCCESS_THRESHOLD, PLAN_OUTCOME_WEIGHT } from './constants.js';
import { checkOptions, enabledPlanAccess, invalid } from './input.js';
import { readPayload } from './plan.js';

export interface ReportPlanOutcomeInput {
  /** The replayed plan's id (`recallPlan(…).plan.id`). */
  planId: string;
  /** How well the replay did, a number from 0 to 1. */
  outcomeScore: number;
}

export interface ReportPlanOutcomeResult {
  planId: string;
  /** The new running outcome. */
  runningOutcome: number;
  /** Outcomes reported so far, this one included. */
  replays: number;
  /** Of those, outcomes below `DEFAULT_SUCCESS_THRESHOLD`. */
  failures: number;
  /** False once the running outcome fell below `DEFAULT_SUCCESS_THRESHOLD`: `recallPlan` no longer returns the plan. */
  replayable: boolean;
}

/**
 * Reports how a replay of a cached plan went. The plan keeps a running
 * outcome, an exponential moving average seeded with the score it was cached
 * with (`running ← α·score + (1 − α)·running`, α = `PLAN_OUTCOME_WEIGHT`), a
 * replay count and a failure count (scores below `DEFAULT_SUCCESS_THRESHOLD`).
 * Once the running outcome falls below that threshold, `recallPlan` stops
 * returning the plan. The stats live beside the plan record (which stays as
 * hashed), written in one transaction with a `plan_outcome` audit event.
 *
 * Any caller who can see the plan may report; a missing or invisible plan is
 * `NOT_FOUND`, a score outside 0..1 (or NaN) `INVALID_INPUT`, and either
 * changes nothing. Fails with `EXPERIENCE_DISABLED` when experience memory is off.
 */
export async function reportPlanOutcome(
  handle: MemoryHandle,
  input: ReportPlanOutcomeInput,
): Promise<ReportPlanOutcomeResult> {
  const access = enabledPlanAccess(handle);
  checkOptions('input', input, ['planId', 'outcomeScore']);
  if (typeof input.planId !== 'string') throw invalid('planId', 'must be a string');
  const score = input.outcomeScore;
  if (typeof score !== 'number' || !(score >= 0 && score <= 1)) {
    throw invalid('outcomeScore', 'must be a number from 0 to 1');
  }
  const stats = await access.updatePlanStats(input.planId, (plan, current) => {
    const previous = current?.runningOutcome ?? readPayload(plan)?.outcome_score ?? score;
    const runningOutcome = PLAN_OUTCOME_WEIGHT * score + (1 - PLAN_OUTCOME_WEIGHT) * previous;
    const replays = (current?.replays ?? 0) + 1;
    const failures = (current?.failures ?? 0) + (score < DEFAULT_SUCCESS_THRESHOLD ? 1 : 0);
    return {
      runningOutcome,
      replays,
      failures,
      details: { outcomeScore: score, runningOutcome, replays, failures },
    };
  });
  return {
    planId: stats.planId,
    runningOutcome: stats.runningOutcome,
    replays: stats.replays,
    failures: stats.failures,
    replayable: stats.runningOutcome >= DEFAULT_SUCCESS_THRESHOLD,
  };
}
