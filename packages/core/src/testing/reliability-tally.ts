import { appendFileSync } from 'node:fs';

/** The figures `pnpm test:reliability` adds up across test files and stores. */
export interface ReliabilityCounts {
  /** Access-matrix cases checked (one per relation × operation × scope or strategy). */
  matrixCases: number;
  /** Matrix cases whose outcome differed from the rule: any difference counts as a leak. */
  leaks: number;
  /** Generated inputs run through the fuzzing properties. */
  fuzzRuns: number;
  /** Writer processes killed with SIGKILL mid-workload. */
  crashRounds: number;
  /** Acknowledged writes looked up after a crash or a server fault. */
  acknowledgedWritesChecked: number;
  /** Acknowledged writes missing or changed afterwards. */
  lostWrites: number;
  /** Server stop/restart cycles under load. */
  serverFaults: number;
  /** Tampering attacks made on stored data. */
  tamperCasesTried: number;
  /** Attacks that verification reported at the right kind and position. */
  tamperCasesDetected: number;
}

/**
 * Adds counts to the reliability report: one JSON line appended to the file
 * named by `MNEMO_RELIABILITY_TALLY` (set by `pnpm test:reliability`), nothing
 * otherwise. Tests tally what they checked before asserting on it, so a
 * failing run still reports what it saw.
 */
export function tally(counts: Partial<ReliabilityCounts>): void {
  const file = process.env.MNEMO_RELIABILITY_TALLY;
  if (file === undefined || file === '') return;
  appendFileSync(file, `${JSON.stringify(counts)}\n`);
}
