import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { createEngine } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
let folder: string;
const cleanup: (() => unknown)[] = [];

beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-file-'));
});
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
  rmSync(folder, { recursive: true, force: true });
});

function open(path: string, ids = createSequentialIds()) {
  const store = createDuckDBStore({ path });
  cleanup.push(() => store.close());
  const engine = createEngine({ store, clock: createManualClock('2026-01-01T00:00:00.000Z'), ids });
  return { store, engine };
}

/** Raw SQL against the file, as an attacker with file access would run it. */
async function tamper(path: string, ...statements: string[]): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const connection = await instance.connect();
  for (const sql of statements) await connection.run(sql);
  connection.closeSync();
  instance.closeSync();
}

async function seed(path: string) {
  const { engine, store } = open(path);
  await engine.init();
  const a = engine.as('agent-a');
  for (let i = 0; i < 5; i += 1) await a.remember({ content: `entry ${i}` });
  const verification = await engine.verifyAudit();
  await store.close();
  return verification.heads;
}

describe('DuckDB file store', () => {
  it('keeps records and the audit chain across close and reopen', async () => {
    const path = join(folder, 'm.duckdb');
    const first = open(path);
    await first.engine.init();
    const { id } = await first.engine
      .as('agent-a')
      .remember({ content: 'durable fact', tags: ['x'] });
    await first.store.close();
    const second = open(path, createSequentialIds('b-'));
    await second.engine.init();
    const a = second.engine.as('agent-a');
    expect((await a.get(id)).content).toBe('durable fact');
    expect((await a.recall({ query: 'durable' })).hits.map((hit) => hit.record.id)).toEqual([id]);
    await a.remember({ content: 'second session' });
    const verification = await second.engine.verifyAudit();
    expect([verification.ok, verification.events, verification.heads[0]?.seq]).toEqual([
      true,
      3,
      3,
    ]);
  });

  it('reports a file held by another process as STORE_UNAVAILABLE with a clear message', async () => {
    const path = join(folder, 'held.duckdb');
    const holder: ChildProcess = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         await DuckDBInstance.create(process.argv[1]);
         process.stdout.write('ready\\n');
         setInterval(() => {}, 1000);`,
        path,
      ],
      { cwd: packageDir, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    cleanup.push(() => holder.kill('SIGKILL'));
    await new Promise<void>((resolve, reject) => {
      holder.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      holder.on('exit', (code) => reject(new Error(`holder exited with ${code}`)));
    });
    const { store } = open(path);
    const error = await store.init().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', name: 'MnemoError' });
    expect((error as Error).message).toContain('held by another process');
    await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it('redaction erases the content and metadata from the row and the index, keeping the hash', async () => {
    const path = join(folder, 'r.duckdb');
    const { engine, store } = open(path);
    await engine.init();
    const a = engine.as('agent-a');
    const { id, contentHash } = await a.remember({
      content: 'passport number X1234567',
      metadata: { passport: 'X1234567' },
    });
    await a.forget({ ids: [id], mode: 'redact' });
    expect((await engine.verifyAudit()).ok).toBe(true);
    await store.close();
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    const rows = (
      await connection.runAndReadAll(
        'SELECT content, metadata, content_hash, deleted_at IS NOT NULL AS deleted FROM mnemo_records',
      )
    ).getRowObjectsJS();
    const postings = (
      await connection.runAndReadAll(
        `SELECT count(*) AS n FROM mnemo_postings WHERE term = 'x1234567'`,
      )
    ).getRowObjectsJS();
    connection.closeSync();
    instance.closeSync();
    expect(rows).toEqual([
      { content: '[redacted]', metadata: '{}', content_hash: contentHash, deleted: true },
    ]);
    expect(postings).toEqual([{ n: 0n }]);
  });

  it('detects a changed, deleted, reordered or inserted audit event, and a deleted head event', async () => {
    const attacks: [string, string[], { kind: string; seq: number }][] = [
      [
        'changed details',
        [`UPDATE mnemo_audit_events SET details = '{"forged":true}' WHERE seq = 3`],
        { kind: 'hash_mismatch', seq: 3 },
      ],
      [
        'changed record ids',
        [`UPDATE mnemo_audit_events SET record_ids = ['x'] WHERE seq = 2`],
        { kind: 'hash_mismatch', seq: 2 },
      ],
      [
        'deleted event',
        ['DELETE FROM mnemo_audit_events WHERE seq = 2'],
        { kind: 'seq_gap', seq: 2 },
      ],
      [
        'swapped events',
        [
          'UPDATE mnemo_audit_events SET seq = 100 WHERE seq = 2',
          'UPDATE mnemo_audit_events SET seq = 2 WHERE seq = 3',
          'UPDATE mnemo_audit_events SET seq = 3 WHERE seq = 100',
        ],
        { kind: 'hash_mismatch', seq: 2 },
      ],
      [
        'inserted event',
        [
          'UPDATE mnemo_audit_events SET seq = seq + 10 WHERE seq >= 3',
          'UPDATE mnemo_audit_events SET seq = seq - 9 WHERE seq >= 13',
          `INSERT INTO mnemo_audit_events SELECT chain, 3, 'forged', occurred_at, principal, op, record_ids, details, hash, hash FROM mnemo_audit_events WHERE seq = 2`,
        ],
        { kind: 'hash_mismatch', seq: 3 },
      ],
      [
        'deleted head event',
        ['DELETE FROM mnemo_audit_events WHERE seq = 5'],
        { kind: 'head_mismatch', seq: 5 },
      ],
    ];
    for (const [label, statements, expected] of attacks) {
      const path = join(folder, `${label.replaceAll(' ', '-')}.duckdb`);
      await seed(path);
      await tamper(path, ...statements);
      const { engine } = open(path);
      await engine.init();
      const [problem, ...more] = (await engine.verifyAudit()).problems;
      expect({ label, kind: problem?.kind, seq: problem?.seq, more: more.length }).toEqual({
        label,
        ...expected,
        more: 0,
      });
    }
  });

  it('detects a truncated tail given the head the application kept', async () => {
    const path = join(folder, 'truncated.duckdb');
    const heads = await seed(path);
    // The attacker removes the last two events and rewinds the recorded head consistently.
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    await connection.run('DELETE FROM mnemo_audit_events WHERE seq > 3');
    await connection.run(
      'UPDATE mnemo_audit_heads SET seq = 3, hash = (SELECT hash FROM mnemo_audit_events WHERE seq = 3)',
    );
    connection.closeSync();
    instance.closeSync();
    const { engine } = open(path);
    await engine.init();
    expect((await engine.verifyAudit()).ok).toBe(true);
    const verification = await engine.verifyAudit({ knownHeads: heads });
    expect(verification.problems.map((p) => [p.kind, p.chain, p.seq])).toEqual([
      ['truncated', 'agent-a', 4],
    ]);
  });
});
