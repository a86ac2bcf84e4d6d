import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { createEngine } from '@mnemo/core';
import { crashFindings, runCrashRounds } from '@mnemo/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_SUFFIX } from '../src/duckdb-store.js';
import { createDuckDBStore } from '../src/index.js';

// A few rounds by default; MNEMO_RELIABILITY_FULL=1 (pnpm test:reliability --full) runs 25.
const ROUNDS = process.env.MNEMO_RELIABILITY_FULL === '1' ? 25 : 4;
// Postings are sorted into runs (and runs merged) every few writes, so kills land in those
// transactions too.
const RUN_SIZE = 64;
const here = dirname(fileURLToPath(import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-crash-'));
afterEach(() => rmSync(folder, { recursive: true, force: true }));

describe('crash safety', () => {
  it(`keeps every acknowledged write through ${ROUNDS} SIGKILLs of a writer process`, async () => {
    const path = join(folder, 'crash.duckdb');
    // Bytes of journal each killed writer left: frames acknowledged and not yet in the file.
    const journals: number[] = [];
    const { seed, reports } = await runCrashRounds({
      rounds: ROUNDS,
      writer: (tag) => ({
        command: process.execPath,
        args: [join(here, 'fixtures', 'crash-writer.mjs'), path, tag, String(RUN_SIZE)],
        cwd: here,
      }),
      open: async () => {
        journals.push(statSync(`${path}${JOURNAL_SUFFIX}`, { throwIfNoEntry: false })?.size ?? 0);
        const store = createDuckDBStore({ path, postingsRunSize: RUN_SIZE });
        await store.init();
        return { engine: createEngine({ store }), close: () => store.close() };
      },
    });
    // Every round was killed mid-workload, after acknowledging writes, and lost none of them.
    expect({ seed, findings: crashFindings(reports) }).toEqual({ seed, findings: [] });
    // Kills that left frames pending, and reopening applied them: no journal is left.
    expect(journals.filter((bytes) => bytes > 0).length).toBeGreaterThan(ROUNDS / 2);
    expect(statSync(`${path}${JOURNAL_SUFFIX}`, { throwIfNoEntry: false })).toBeUndefined();
    // Every live record kept its postings exactly once, whether fresh or sorted.
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    const [postings] = (
      await connection.runAndReadAll(
        `WITH all_postings AS (
           SELECT record_id, term FROM mnemo_postings
           UNION ALL SELECT record_id, term FROM mnemo_postings_sorted
         )
         SELECT
           (SELECT count(*) FROM all_postings) AS postings,
           (SELECT count(*) FROM (SELECT DISTINCT record_id, term FROM all_postings)) AS distinct_postings,
           (SELECT count(DISTINCT record_id) FROM all_postings) AS records_with_postings,
           (SELECT count(*) FROM mnemo_records
            WHERE deleted_at IS NULL AND NOT is_plan AND doc_length > 0) AS live_records,
           (SELECT count(DISTINCT run) FROM mnemo_postings_sorted) AS runs`,
      )
    ).getRowObjectsJS();
    connection.closeSync();
    instance.closeSync();
    expect(postings?.postings).toBe(postings?.distinct_postings);
    expect(postings?.records_with_postings).toBe(postings?.live_records);
    expect(Number(postings?.runs)).toBeGreaterThan(0);
  }, 300_000);
});
