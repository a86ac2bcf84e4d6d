import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { createEngine, type NewRecord } from '@mnemo/core';
import { createManualClock, createSequentialIds, memoryRecord } from '@mnemo/core/testing';
import { describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';
import { BEFORE_AUDIT_IDS_AS_TEXT, queryFile, runOnFile } from './raw-file.js';
import { useTempFolder } from './temp-folder.js';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const { file, cleanup } = useTempFolder('mnemo-duckdb-file-');

function open(path: string, ids = createSequentialIds()) {
  const store = createDuckDBStore({ path });
  cleanup.push(() => store.close());
  const engine = createEngine({ store, clock: createManualClock('2026-01-01T00:00:00.000Z'), ids });
  return { store, engine };
}

describe('DuckDB file store', () => {
  it('keeps records and the audit chain across close and reopen', async () => {
    const path = file('m.duckdb');
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

  it('drops the rows of a failed write for good, even once its appender is garbage collected', async () => {
    // A failed append kept its rows buffered in the native appender, which flushed them on the
    // writer connection whenever garbage collection destroyed it: a rolled-back record came
    // back. A child process, to force garbage collection.
    const path = file('failed-append.duckdb');
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--expose-gc', join(packageDir, 'test', 'fixtures', 'failed-append.mjs'), path],
        (error, stdout, stderr) =>
          error ? reject(new Error(stderr || String(error))) : resolve(stdout),
      );
    });
    expect(JSON.parse(output.trim().split('\n').at(-1) as string)).toEqual({
      failed: 'INTERNAL',
      afterGc: [],
      problems: [],
    });
  });

  it('rejects a missing or empty path before any I/O', () => {
    for (const options of [{ path: '' }, { path: 42 }, {}, undefined]) {
      expect(() => createDuckDBStore(options as unknown as { path: string })).toThrow(
        expect.objectContaining({
          code: 'INVALID_INPUT',
          message: 'path: a file path or ":memory:" is required',
          details: { field: 'path' },
        }),
      );
    }
  });

  it('lists records in id order after afterId, at most limit, plans only when asked for', async () => {
    const store = createDuckDBStore({ path: ':memory:' });
    cleanup.push(() => store.close());
    await store.init();
    const item = (id: string, isPlan = false): NewRecord => ({
      record: memoryRecord({ id, agentId: 'owner', content: `note ${id}` }),
      dedupKey: id.repeat(64).slice(0, 64),
      isPlan,
      terms: [],
      docLength: 0,
      planTokens: isPlan ? ['note'] : null,
    });
    await store.transaction((tx) =>
      tx.insertRecords([item('d'), item('b'), item('p', true), item('a'), item('c')]),
    );
    const visibility = { agentId: 'owner', orgId: null, now: new Date('2030-01-01') };
    const ids = async (page: { afterId?: string; limit?: number; includePlans?: boolean }) =>
      (await store.list({ visibility, filters: {}, ...page })).map(({ record }) => record.id);
    expect({
      all: await ids({}),
      withPlans: await ids({ includePlans: true }),
      afterB: await ids({ afterId: 'b' }),
      afterBFirst: await ids({ afterId: 'b', limit: 1 }),
      first2: await ids({ limit: 2 }),
      afterLast: await ids({ afterId: 'd' }),
      plansAfterC: await ids({ afterId: 'c', includePlans: true }),
    }).toEqual({
      all: ['a', 'b', 'c', 'd'],
      withPlans: ['a', 'b', 'c', 'd', 'p'],
      afterB: ['c', 'd'],
      afterBFirst: ['c'],
      first2: ['a', 'b'],
      afterLast: [],
      plansAfterC: ['d', 'p'],
    });
  });

  it('lists grants by record, then grantee org (none first), then grantee agent', async () => {
    const store = createDuckDBStore({ path: ':memory:' });
    cleanup.push(() => store.close());
    await store.init();
    const at = new Date('2026-01-01T00:00:00.000Z');
    const record = (id: string): NewRecord => ({
      record: memoryRecord({ id, agentId: 'owner', scope: 'shared', content: `note ${id}` }),
      dedupKey: id.repeat(64).slice(0, 64),
      isPlan: false,
      terms: [],
      docLength: 0,
      planTokens: null,
    });
    // Grants of other orgs than the record's, as an import may write them.
    const grant = (recordId: string, granteeAgentId: string, granteeOrgId: string | null) => ({
      recordId,
      granteeAgentId,
      granteeOrgId,
      permission: 'read' as const,
      grantedBy: 'owner',
      createdAt: at,
      expiresAt: null,
    });
    await store.transaction(async (tx) => {
      await tx.insertRecords([record('b'), record('a')]);
      await tx.putGrants([
        grant('b', 'amy', null),
        grant('a', 'zed', 'acme'),
        grant('a', 'amy', 'zeta'),
        grant('a', 'zed', null),
        grant('a', 'bob', 'acme'),
        grant('a', 'amy', null),
      ]);
    });
    const listed = await store.listGrants(['b', 'a']);
    expect(listed.map((g) => [g.recordId, g.granteeOrgId, g.granteeAgentId])).toEqual([
      ['a', null, 'amy'],
      ['a', null, 'zed'],
      ['a', 'acme', 'bob'],
      ['a', 'acme', 'zed'],
      ['a', 'zeta', 'amy'],
      ['b', null, 'amy'],
    ]);
  });

  it('lists the plan stats of the plans given that have some, by plan id', async () => {
    const store = createDuckDBStore({ path: ':memory:' });
    cleanup.push(() => store.close());
    await store.init();
    const plan = (id: string): NewRecord => ({
      record: memoryRecord({ id, agentId: 'owner', content: `plan ${id}` }),
      dedupKey: id.repeat(64).slice(0, 64),
      isPlan: true,
      terms: [],
      docLength: 0,
      planTokens: [id],
    });
    const stats = (planId: string, replays: number) => ({
      planId,
      runningOutcome: 0.5 + replays / 10,
      replays,
      failures: replays - 1,
      updatedAt: new Date(Date.UTC(2026, 0, replays)),
    });
    await store.transaction(async (tx) => {
      await tx.insertRecords([plan('p2'), plan('p3'), plan('p1')]);
      await tx.putPlanStats(stats('p2', 2));
      await tx.putPlanStats(stats('p1', 1));
      await tx.putPlanStats(stats('p1', 3));
    });
    expect(await store.listPlanStats(['p3', 'p2', 'missing', 'p1'])).toEqual([
      stats('p1', 3),
      stats('p2', 2),
    ]);
    expect(await store.listPlanStats([])).toEqual([]);
  });

  it('refuses a second store on a file this process has open, until the first closes', async () => {
    const path = file('twice.duckdb');
    const first = open(path);
    await first.engine.init();
    const { id } = await first.engine.as('agent-a').remember({ content: 'one' });
    for (const other of [path, join(dirname(path), '.', 'twice.duckdb')]) {
      const second = open(other);
      const error = await second.store.init().catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'STORE_UNAVAILABLE',
        details: { reason: 'file_in_use' },
      });
      expect((error as Error).message).toContain('already open by another store of this process');
    }
    await first.engine.as('agent-a').remember({ content: 'three' });
    await first.store.close();
    const third = open(path, createSequentialIds('c-'));
    await third.engine.init();
    expect((await third.engine.as('agent-a').get(id)).content).toBe('one');
    expect((await third.engine.verifyAudit()).events).toBe(2);
  });

  it('refuses a second store on a new file opened through a symbolic link to its folder', async () => {
    const real = file('real');
    const link = file('link');
    mkdirSync(real);
    symlinkSync(real, link);
    // The file does not exist yet when the first store claims it.
    const first = open(join(link, 'new.duckdb'));
    await first.engine.init();
    const second = open(join(real, 'new.duckdb'));
    const error = await second.store.init().catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringContaining('already open by another store of this process'),
    });
  });

  it('rejects work started before init() has finished, and init() still succeeds', async () => {
    const { store, engine } = open(file('early.duckdb'));
    let done = false;
    const initializing = engine.init().finally(() => {
      done = true;
    });
    // A transaction every millisecond while the migrations run: each must be refused cleanly.
    const early: Promise<string>[] = [];
    while (!done) {
      early.push(
        store.transaction(async () => 'ran').catch((e: { code?: string }) => String(e.code)),
      );
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await initializing;
    expect(early.length).toBeGreaterThan(3);
    expect(new Set(await Promise.all(early))).toEqual(new Set(['STORE_UNAVAILABLE']));
    expect((await engine.as('agent-a').remember({ content: 'in time' })).deduplicated).toBe(false);
  });

  it('still deduplicates after a rolled-back transaction that read the dedup keys after a delete', async () => {
    const path = file('dedup.duckdb');
    const first = open(path);
    await first.engine.init();
    const x = await first.engine.as('agent-a').remember({ content: 'the key rotates on mondays' });
    await first.store.close();
    const second = open(path, createSequentialIds('b-'));
    await second.engine.init();
    const at = new Date('2026-01-01T00:00:00.000Z');
    await expect(
      second.store.transaction(async (tx) => {
        await tx.deleteRecords([x.id], 'hard', at);
        await tx.findLiveDuplicates(['0'.repeat(64)], at);
        throw new Error('the caller fails');
      }),
    ).rejects.toThrow('the caller fails');
    expect(
      await second.engine.as('agent-a').remember({ content: 'the key rotates on mondays' }),
    ).toEqual({ ...x, deduplicated: true });
  });

  it('reports a file held by another process as STORE_UNAVAILABLE with a clear message', async () => {
    const path = file('held.duckdb');
    const holder: ChildProcess = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        // The timer holds the instance: once collected, DuckDB closes the file and lets go of its lock.
        `import { DuckDBInstance } from '@duckdb/node-api';
         const instance = await DuckDBInstance.create(process.argv[1]);
         process.stdout.write('ready\\n');
         setInterval(() => instance, 1000);`,
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
    expect(error).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      name: 'MnemoError',
      details: { reason: 'file_in_use' },
    });
    expect((error as Error).message).toContain('held by another process');
    await expect(store.auditHeads()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it('refuses a file of a schema version newer than it knows, and opens again once that is undone', async () => {
    const path = file('v.duckdb');
    const first = open(path);
    await first.engine.init();
    await first.engine.as('agent-a').remember({ content: 'written by this version' });
    await first.store.close();
    const versions = async (sql: string) => {
      const instance = await DuckDBInstance.create(path);
      const connection = await instance.connect();
      await connection.run(sql);
      const rows = (
        await connection.runAndReadAll('SELECT version FROM mnemo_migrations ORDER BY version')
      ).getRowObjectsJS();
      connection.closeSync();
      instance.closeSync();
      return rows.map((row) => Number(row.version));
    };
    const known = await versions(
      "INSERT INTO mnemo_migrations (version, name) VALUES (99, 'later')",
    );
    const second = open(path);
    const error = await second.store.init().catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `${path} is at schema version 99; this @mnemo/store-duckdb knows versions up to ${known.at(-2)}: upgrade it`,
    });
    expect(await versions('DELETE FROM mnemo_migrations WHERE version = 99')).toEqual(
      known.slice(0, -1),
    );
    const third = open(path);
    await third.engine.init();
    expect((await third.engine.verifyAudit()).events).toBe(1);
  });

  it('keeps audit record ids as JSON text, and migrates a file that kept them as a list', async () => {
    // A list column cost every commit the lists of all rows appended since the last
    // checkpoint (migration 8); the events must read back the same after the migration.
    const path = file('audit-ids.duckdb');
    const first = open(path);
    await first.engine.init();
    const a = first.engine.as('agent-a');
    await a.rememberMany([{ content: 'red boots' }, { content: 'red scarf' }]);
    await a.recall({ query: 'red scarf', strategy: 'lexical' });
    await a.forget({ ids: ['id-000001', 'id-000002'] });
    const events = await first.store.readAudit({ limit: 10 });
    await first.store.close();
    expect(events.map((event) => [event.op, event.recordIds])).toEqual([
      ['remember', ['id-000001']],
      ['remember', ['id-000002']],
      ['recall', ['id-000002', 'id-000001']],
      ['forget', ['id-000001', 'id-000002']],
    ]);
    const saved = () =>
      queryFile(
        path,
        'SELECT typeof(record_ids) AS type, record_ids FROM mnemo_audit_events ORDER BY seq',
      );
    expect(await saved()).toEqual([
      { type: 'VARCHAR', record_ids: '["id-000001"]' },
      { type: 'VARCHAR', record_ids: '["id-000002"]' },
      { type: 'VARCHAR', record_ids: '["id-000002","id-000001"]' },
      { type: 'VARCHAR', record_ids: '["id-000001","id-000002"]' },
    ]);

    await runOnFile(path, BEFORE_AUDIT_IDS_AS_TEXT);
    expect((await saved()).map((row) => row.type)).toEqual(Array(4).fill('VARCHAR[]'));
    const second = open(path);
    await second.engine.init();
    expect(await second.store.readAudit({ limit: 10 })).toEqual(events);
    expect(await second.engine.verifyAudit()).toMatchObject({ ok: true, events: 4 });
    await second.store.close();
    expect(await saved()).toEqual([
      { type: 'VARCHAR', record_ids: '["id-000001"]' },
      { type: 'VARCHAR', record_ids: '["id-000002"]' },
      { type: 'VARCHAR', record_ids: '["id-000002","id-000001"]' },
      { type: 'VARCHAR', record_ids: '["id-000001","id-000002"]' },
    ]);
    expect(
      await queryFile(path, 'SELECT version, name FROM mnemo_migrations WHERE version = 8'),
    ).toEqual([{ version: 8, name: 'audit record ids as JSON text' }]);
  });

  it('redaction erases the content and metadata from the row and the index, keeping the hash', async () => {
    const path = file('r.duckdb');
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
});
