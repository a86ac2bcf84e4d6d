export {
  PLAN_SIGNATURE_STRATEGIES as SIGNATURE_STRATEGIES,
  type PlanSignatureStrategy as SignatureStrategy,
} from '@mnemo/core';
export {
  DEFAULT_SIMILARITY_THRESHOLD,
  DEFAULT_SUCCESS_THRESHOLD,
  EXPERIENCE_PLAN_TAG,
  PLAN_METADATA_KEY,
  PLAN_OUTCOME_WEIGHT,
} from './constants.js';
export { ENRICHED_PREFIX } from './enriched-signature.js';
export type { CachedPlan, PlanPayload } from './plan.js';
export { type RecallPlanInput, type RecallPlanResult, recallPlan } from './recall-plan.js';
export { type RememberPlanInput, type RememberPlanResult, rememberPlan } from './remember-plan.js';
export {
  type ReportPlanOutcomeInput,
  type ReportPlanOutcomeResult,
  reportPlanOutcome,
} from './report-plan-outcome.js';
export { compareCodePoints, jaccard, signatureTokens } from './signature.js';
export { type ExperienceMemoryOptions, withExperienceMemory } from './with-experience-memory.js';
