import { accessCountsSpec } from './access-counts.spec.js';
import { accessMatrixSpec } from './access-matrix.spec.js';
import { auditSpec } from './audit.spec.js';
import { concurrencySpec } from './concurrency.spec.js';
import { forgetSpec } from './forget.spec.js';
import { grantsSpec } from './grants.spec.js';
import { groupCommitSpec } from './group-commit.spec.js';
import { type ConformanceOptions, createHarness, type TestApi } from './harness.js';
import { invalidInputSpec } from './invalid-input.spec.js';
import { lifecycleSpec } from './lifecycle.spec.js';
import { planLifecycleSpec } from './plan-lifecycle.spec.js';
import { plansSpec } from './plans.spec.js';
import { recallFiltersSpec } from './recall-filters.spec.js';
import { recallLexicalSpec } from './recall-lexical.spec.js';
import { recallSemanticSpec } from './recall-semantic.spec.js';
import { rememberSpec } from './remember.spec.js';
import { rememberManySpec } from './remember-many.spec.js';
import { shareSpec } from './share.spec.js';
import { tamperSpec } from './tamper.spec.js';
import { transferSpec } from './transfer.spec.js';
import { visibilitySpec } from './visibility.spec.js';

/** The time limit of each conformance test, whatever the runner's default. */
export const CONFORMANCE_TEST_TIMEOUT_MS = 60_000;

/**
 * Runs the whole conformance suite against a store. A store's conformance test
 * is a few lines:
 *
 * ```ts
 * import * as vitest from 'vitest';
 * import { runConformanceSuite } from '@mnemo/core/testing';
 * runConformanceSuite(vitest, { name: 'my-store', createStore: () => createMyStore() });
 * ```
 */
export function runConformanceSuite(t: TestApi, options: ConformanceOptions): void {
  // Its own time limit, so a store's tests pass under vitest's default (5 s): a fuzz or
  // concurrency test can take longer than that on a slow machine.
  t.describe(`conformance: ${options.name}`, { timeout: CONFORMANCE_TEST_TIMEOUT_MS }, () => {
    const h = createHarness(t, options);
    rememberSpec(t, h);
    rememberManySpec(t, h);
    invalidInputSpec(t, h);
    recallLexicalSpec(t, h);
    recallFiltersSpec(t, h);
    recallSemanticSpec(t, h);
    visibilitySpec(t, h);
    accessMatrixSpec(t, h);
    forgetSpec(t, h);
    shareSpec(t, h);
    grantsSpec(t, h);
    auditSpec(t, h);
    plansSpec(t, h);
    planLifecycleSpec(t, h);
    transferSpec(t, h);
    concurrencySpec(t, h);
    accessCountsSpec(t, h);
    groupCommitSpec(t, h);
    lifecycleSpec(t, h, options);
    // fast-check is loaded here only, so that the kit's test doubles import without it.
    t.describe('fuzz', async () => {
      const { fuzzSpec } = await import('./fuzz.spec.js');
      fuzzSpec(t, h);
    });
    tamperSpec(t, h, options);
  });
}

export type {
  ConformanceOptions,
  Fixture,
  Harness,
  TamperAttack,
  TestApi,
} from './harness.js';
export { START } from './harness.js';
