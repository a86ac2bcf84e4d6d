import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { createEngine, planAccess } from '@mnemo/core';
import { crashFindings, runCrashRounds } from '@mnemo/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOURNAL_SUFFIX } from '../src/duckdb-store.js';
import { createDuckDBStore } from '../src/index.js';

// A few rounds by default; MNEMO_RELIABILITY_FULL=1 (pnpm test:reliability --full) runs 25.
const ROUNDS = process.env.MNEMO_RELIABILITY_FULL === '1' ? 25 : 4;
// Postings are sorted into runs (and runs merged) every few writes, so kills land in those
// transactions too.
const RUN_SIZE = 64;
const here = dirname(fileURLToPath(import.meta.url));
let folder = '';
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-crash-'));
});
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

  it("keeps DuckDB's indexes whole when its own log is replayed after a SIGKILL: dedup, grants, deletes", async () => {
    const path = join(folder, 'wal.duckdb');
    const out = join(folder, 'ids.json');
    // The writer dies with SIGKILL, by its own hand, once its rows are in DuckDB's log.
    await expect(
      promisify(execFile)(process.execPath, [join(here, 'fixtures', 'wal-writer.mjs'), path, out], {
        cwd: here,
      }),
    ).rejects.toMatchObject({ signal: 'SIGKILL' });
    const { ids, plan } = JSON.parse(readFileSync(out, 'utf8')) as { ids: string[]; plan: string };
    expect(statSync(`${path}.wal`).size).toBeGreaterThan(0);
    // DuckDB replays its log on open and checkpoints on close, then the file is opened again.
    const first = createDuckDBStore({ path });
    await first.init();
    await first.close();
    const store = createDuckDBStore({ path });
    const engine = createEngine({ store, experienceMemory: true });
    await engine.init();
    try {
      const a = engine.as('agent-a');
      // The dedup index finds the replayed record.
      expect(await a.remember({ content: 'the red fox', scope: 'shared' })).toMatchObject({
        id: ids[0],
        deduplicated: true,
      });
      // The grant index finds the replayed grant: for the grantee's search and in an export.
      const b = engine.as('agent-b');
      expect(
        (await b.recall({ query: 'fox', strategy: 'lexical' })).hits.map((hit) => hit.record.id),
      ).toEqual([ids[0]]);
      const grants: string[] = [];
      for await (const { record, grants: held } of engine.exportRecords()) {
        for (const grant of held) grants.push(`${record.id} ${grant.granteeAgentId}`);
      }
      expect(grants).toEqual([`${ids[0]} agent-b`]);
      // The plan token index finds the replayed plan.
      const candidates = await planAccess(a).findCandidates({
        tokens: ['find', 'fox', 'the'],
        minTokens: 3,
        maxTokens: 3,
      });
      expect(candidates.map((candidate) => candidate.record.id)).toEqual([plan]);
      // Deletes find their rows in every index.
      const [red, blue, green] = ids as [string, string, string];
      expect(await a.forget({ ids: [blue], mode: 'hard' })).toMatchObject({ forgotten: [blue] });
      expect(await a.forget({ ids: [red, plan] })).toMatchObject({
        forgotten: [red, plan].sort(),
      });
      expect(await a.share({ recordId: green, with: ['agent-b'] })).toMatchObject({
        recordId: green,
      });
      expect((await engine.verifyAudit()).ok).toBe(true);
      expect((await engine.verifyRecords()).ok).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
