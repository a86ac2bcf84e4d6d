// pnpm test:reliability [--full]: runs the reliability tests (access matrix, fuzzing, tamper
// evidence, crash safety, server faults, a DuckDB file held by another process) on both stores
// and prints one JSON line with what they checked. --full runs the crash and server-fault tests
// with their full counts (MNEMO_RELIABILITY_FULL=1). Needs MNEMO_TEST_PG_URL for PostgreSQL.
//
// node scripts/test-reliability.mjs --summarize <tally file>: only prints the line for a tally
// file written by an earlier test run (`.ci/run` sets MNEMO_RELIABILITY_TALLY for `pnpm test`).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const KEYS = [
  'matrixCases',
  'leaks',
  'fuzzRuns',
  'crashRounds',
  'acknowledgedWritesChecked',
  'lostWrites',
  'serverFaults',
  'tamperCasesTried',
  'tamperCasesDetected',
];
const FILES = [
  'packages/experience/test/fuzz.test.ts',
  'packages/store-duckdb/test/conformance.test.ts',
  'packages/store-duckdb/test/crash.test.ts',
  'packages/store-duckdb/test/duckdb-file.test.ts',
  'packages/store-postgres/test/conformance.test.ts',
  'packages/store-postgres/test/crash.test.ts',
  'packages/store-postgres/test/server-faults.test.ts',
];
const NAMES =
  'access matrix|fuzz|tamper evidence|crash safety|server faults|held by another process';

/** Adds up the tally lines of `file`. */
function summarize(file) {
  const totals = Object.fromEntries(KEYS.map((key) => [key, 0]));
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  for (const line of lines.filter((l) => l.trim() !== '')) {
    for (const [key, value] of Object.entries(JSON.parse(line))) totals[key] += value;
  }
  return totals;
}

const args = process.argv.slice(2);
if (args[0] === '--summarize') {
  console.log(JSON.stringify({ report: 'reliability', ...summarize(args[1]) }));
  process.exit(0);
}

const full = args.includes('--full');
const folder = mkdtempSync(join(tmpdir(), 'mnemo-reliability-'));
const tallyFile = join(folder, 'tally.jsonl');
const resultsFile = join(folder, 'results.json');
const vitest = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    ...FILES,
    '-t',
    NAMES,
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${resultsFile}`,
  ],
  {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      MNEMO_RELIABILITY_TALLY: tallyFile,
      ...(full ? { MNEMO_RELIABILITY_FULL: '1' } : {}),
    },
  },
);
const results = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) : {};
const line = {
  report: 'reliability',
  full,
  postgres: Boolean(process.env.MNEMO_TEST_PG_URL),
  passed: results.numPassedTests ?? 0,
  failed: results.numFailedTests ?? 0,
  ...summarize(tallyFile),
};
rmSync(folder, { recursive: true, force: true });
console.log(JSON.stringify(line));
process.exit(vitest.status === 0 && line.failed === 0 && line.passed > 0 ? 0 : 1);
