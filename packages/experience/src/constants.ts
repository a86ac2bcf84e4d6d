import { PLAN_METADATA_KEY as CORE_PLAN_METADATA_KEY, PLAN_TAG } from '@mnemo/core';

/** The reserved tag that makes a record a plan. Only this package writes it. */
export const EXPERIENCE_PLAN_TAG = PLAN_TAG;
/** Where a plan's payload lives in its record's metadata. */
export const PLAN_METADATA_KEY = CORE_PLAN_METADATA_KEY;
/** A cached plan is replayed when its signature similarity reaches this. */
export const DEFAULT_SIMILARITY_THRESHOLD = 0.7;
/** Only outcomes scoring at least this are cached. */
export const DEFAULT_SUCCESS_THRESHOLD = 0.5;
/**
 * Weight of the newest reported outcome in a plan's running outcome (an
 * exponential moving average): running ← α·reported + (1 − α)·running. At 0.5
 * one poor replay (say 0.1) takes a plan cached at 0.9 to 0.5, a second to 0.3:
 * a plan stops being replayed after one or two bad replays, not one unlucky
 * score among many good ones.
 */
export const PLAN_OUTCOME_WEIGHT = 0.5;
