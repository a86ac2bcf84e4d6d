import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@mnemo/core';
import { crashFindings, runCrashRounds } from '@mnemo/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

// A few rounds by default; MNEMO_RELIABILITY_FULL=1 (pnpm test:reliability --full) runs 25.
const ROUNDS = process.env.MNEMO_RELIABILITY_FULL === '1' ? 25 : 4;
const here = dirname(fileURLToPath(import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-crash-'));
afterEach(() => rmSync(folder, { recursive: true, force: true }));

describe('crash safety', () => {
  it(`keeps every acknowledged write through ${ROUNDS} SIGKILLs of a writer process`, async () => {
    const path = join(folder, 'crash.duckdb');
    const { seed, reports } = await runCrashRounds({
      rounds: ROUNDS,
      writer: (tag) => ({
        command: process.execPath,
        args: [join(here, 'fixtures', 'crash-writer.mjs'), path, tag],
        cwd: here,
      }),
      open: async () => {
        const store = createDuckDBStore({ path });
        await store.init();
        return { engine: createEngine({ store }), close: () => store.close() };
      },
    });
    // Every round was killed mid-workload, after acknowledging writes, and lost none of them.
    expect({ seed, findings: crashFindings(reports) }).toEqual({ seed, findings: [] });
  }, 300_000);
});
