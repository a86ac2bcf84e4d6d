import {
  type JsonObject,
  type MemoryRecord,
  PLAN_SIGNATURE_STRATEGIES,
  type PlanSignatureStrategy,
} from '@mnemo/core';
import { PLAN_METADATA_KEY } from './constants.js';

/** A cached plan as returned by `recallPlan`. */
export interface CachedPlan {
  /** The plan record's id. */
  id: string;
  /** The query the plan was cached for. */
  query: string;
  steps: string[];
  chunkIds: string[];
  /** The score the plan was cached with. */
  outcomeScore: number;
  /** Jaccard similarity between the query's signature and the plan's. */
  similarity: number;
  /** The running outcome (see `reportPlanOutcome`): `outcomeScore` until an outcome is reported. */
  runningOutcome: number;
  /** Replay outcomes reported so far. */
  replays: number;
  /** Of those, outcomes below `DEFAULT_SUCCESS_THRESHOLD`. */
  failures: number;
}

/**
 * The payload persisted under `metadata[PLAN_METADATA_KEY]`, snake_case so that
 * other mnemo implementations read the same records.
 */
export interface PlanPayload {
  query: string;
  signature_tokens: string[];
  steps: string[];
  chunk_ids: string[];
  outcome_score: number;
  /**
   * The strategy `signature_tokens` were computed with. Absent means
   * `default`: plans written before strategies existed, and every default
   * plan, keep exactly the SPEC §4 payload.
   */
  signature_strategy?: PlanSignatureStrategy;
  /**
   * For each of `chunk_ids`, the content hash of that record when the plan was
   * cached, or null when it named no record the caller could see (an id of
   * another system). Absent in plans cached before staleness checks.
   */
  chunk_hashes?: (string | null)[];
}

export function toPayloadJson(payload: PlanPayload): JsonObject {
  const { signature_strategy, ...rest } = payload;
  return signature_strategy === undefined || signature_strategy === 'default'
    ? { ...rest }
    : { ...rest, signature_strategy };
}

const isStringArray = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string');

/** The payload of a plan record, or null when it is malformed (a plan written by something else). */
export function readPayload(record: MemoryRecord): PlanPayload | null {
  const payload = record.metadata[PLAN_METADATA_KEY];
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const {
    query,
    signature_tokens,
    steps,
    chunk_ids,
    outcome_score,
    signature_strategy,
    chunk_hashes,
  } = payload;
  const strategy = signature_strategy ?? 'default';
  if (
    !PLAN_SIGNATURE_STRATEGIES.some((known) => known === strategy) ||
    typeof query !== 'string' ||
    !isStringArray(signature_tokens) ||
    !isStringArray(steps) ||
    !isStringArray(chunk_ids) ||
    typeof outcome_score !== 'number' ||
    !(outcome_score >= 0 && outcome_score <= 1)
  ) {
    return null;
  }
  const read: PlanPayload = {
    query,
    signature_tokens,
    steps,
    chunk_ids,
    outcome_score,
    signature_strategy: strategy as PlanSignatureStrategy,
  };
  if (chunk_hashes !== undefined) {
    if (
      !Array.isArray(chunk_hashes) ||
      chunk_hashes.length !== chunk_ids.length ||
      !chunk_hashes.every((hash) => hash === null || typeof hash === 'string')
    ) {
      return null;
    }
    read.chunk_hashes = chunk_hashes as (string | null)[];
  }
  return read;
}
