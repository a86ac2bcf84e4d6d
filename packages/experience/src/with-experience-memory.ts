import { type Engine, PLAN_SIGNATURE_STRATEGIES, type PlanSignatureStrategy } from '@mnemo/core';
import { checkOptions, invalid } from './input.js';

export interface ExperienceMemoryOptions {
  /**
   * How plan signatures are computed: `default` (SPEC §4, a bag of words) or
   * `enriched` (filler removed, stems, number and date slots, negation and
   * direction; see `signatureTokens`). Recorded with each plan; a query is
   * only compared with plans of the same strategy. Default: the engine's
   * (`experienceSignature`, itself `default` unless set). Anything else is
   * `INVALID_INPUT`.
   */
  signature?: PlanSignatureStrategy;
}

/**
 * The same engine with experience memory on. The tier is off by default, so
 * installing this package changes nothing until this (or the engine option
 * `experienceMemory: true`) is used.
 */
export function withExperienceMemory(
  engine: Engine,
  options: ExperienceMemoryOptions = {},
): Engine {
  checkOptions('options', options, ['signature']);
  const { signature } = options;
  if (signature !== undefined && !PLAN_SIGNATURE_STRATEGIES.includes(signature)) {
    throw invalid('options.signature', `must be one of ${PLAN_SIGNATURE_STRATEGIES.join(', ')}`);
  }
  return engine.with({
    experienceMemory: true,
    ...(signature === undefined ? {} : { experienceSignature: signature }),
  });
}
