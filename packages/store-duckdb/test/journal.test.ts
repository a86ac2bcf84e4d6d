import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type AuditEvent,
  createEngine,
  type IdGenerator,
  type MnemoError,
  type NewRecord,
} from '@mnemo/core';
import { createHashEmbedder, createManualClock, memoryRecord } from '@mnemo/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JOURNAL_SUFFIX } from '../src/duckdb-store.js';
import { mapDuckDBError } from '../src/errors.js';
import { createDuckDBStore } from '../src/index.js';
import { Journal, type JournalFrame } from '../src/journal.js';
import type { Session } from '../src/session.js';
import { useTempFolder } from './temp-folder.js';

const here = dirname(fileURLToPath(import.meta.url));
const { file, cleanup } = useTempFolder('mnemo-duckdb-journal-');
const AGENT = { agentId: 'agent-a', orgId: null, now: new Date('2030-01-01') };

/** Bytes in the journal beside `path` (0 when there is none). */
const journalBytes = (path: string) =>
  statSync(`${path}${JOURNAL_SUFFIX}`, { throwIfNoEntry: false })?.size ?? 0;

function open(path: string, ids?: IdGenerator) {
  const store = createDuckDBStore({ path });
  cleanup.push(() => store.close());
  const clock = createManualClock('2026-01-02T00:00:00.000Z');
  const engine = createEngine({
    store,
    embedder: createHashEmbedder({ dimensions: 8 }),
    clock,
    ...(ids === undefined ? {} : { ids }),
  });
  return { store, engine, clock };
}

/** Runs fixtures/journal-writer.mjs: it remembers `contents` and kills itself. */
function rememberAndCrash<T = { id: string; deduplicated: boolean }>(
  path: string,
  contents: string[],
) {
  return new Promise<T[]>((resolve, reject) => {
    execFile(
      process.execPath,
      [join(here, 'fixtures', 'journal-writer.mjs'), path, ...contents],
      (error, stdout, stderr) => {
        if (error?.signal !== 'SIGKILL') {
          reject(new Error(`the writer did not kill itself: ${stderr || String(error)}`));
          return;
        }
        resolve(
          stdout
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line)),
        );
      },
    );
  });
}

describe('DuckDB journal', () => {
  it('acknowledges remembers once journaled, and a store reopened after a crash applies them', async () => {
    const path = file('crash.duckdb');
    const results = await rememberAndCrash(path, [
      'first fact',
      'second fact',
      'first fact',
      'third fact',
    ]);
    expect(results.map((result) => [result.id, result.deduplicated])).toEqual([
      ['id-000001', false],
      ['id-000003', false],
      ['id-000001', true],
      ['id-000006', false],
    ]);
    // The first write of a file runs on it (it loads the file's keys); the next two
    // were acknowledged from the journal alone.
    expect(journalBytes(path)).toBeGreaterThan(0);
    const { store, engine } = await open(path);
    await engine.init();
    expect(journalBytes(path)).toBe(0);
    const listed = await store.list({ visibility: AGENT, filters: {} });
    expect(listed.map(({ record }) => [record.id, record.content])).toEqual([
      ['id-000001', 'first fact'],
      ['id-000003', 'second fact'],
      ['id-000006', 'third fact'],
    ]);
    const audit = await engine.verifyAudit();
    expect([audit.ok, audit.events]).toEqual([true, 3]);
    expect((await engine.verifyRecords()).ok).toBe(true);
    await store.close();
    expect(statSync(`${path}${JOURNAL_SUFFIX}`, { throwIfNoEntry: false })).toBeUndefined();
  });

  it('finds the journal of a file opened through a symbolic link to it, and refuses to open it twice', async () => {
    const path = file('real.duckdb');
    const link = file('link.duckdb');
    await rememberAndCrash(path, ['first fact', 'second fact']);
    expect(journalBytes(path)).toBeGreaterThan(0);
    symlinkSync(path, link);
    const { store, engine } = open(link);
    await engine.init();
    expect(journalBytes(path)).toBe(0);
    const listed = await store.list({ visibility: AGENT, filters: {} });
    expect(listed.map(({ record }) => record.content)).toEqual(['first fact', 'second fact']);
    await expect(open(path).engine.init()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await store.close();
    expect(existsSync(`${link}${JOURNAL_SUFFIX}`)).toBe(false);
  });

  it('refuses a journal left beside a new file by a deleted database, and applies nothing', async () => {
    const path = file('deleted.duckdb');
    await rememberAndCrash(path, ['first fact', 'second fact']);
    const bytes = journalBytes(path);
    expect(bytes).toBeGreaterThan(0);
    rmSync(path);
    rmSync(`${path}.wal`, { force: true });
    const { engine } = open(path);
    const refused = [
      'STORE_UNAVAILABLE',
      `DuckDB: the journal ${path}${JOURNAL_SUFFIX} holds acknowledged writes (1 frames) of a database that is not ${path}, which is new: put that database back beside it, or delete the journal to start empty`,
    ];
    // Retried, on the same store and on another: the file the first attempt made is still new.
    for (const attempt of [engine, engine, open(path).engine]) {
      const error = await attempt.init().then(
        () => null,
        (e: MnemoError) => e,
      );
      expect([error?.code, error?.message]).toEqual(refused);
    }
    expect(journalBytes(path)).toBe(bytes);
    // Deleting the journal too starts empty.
    rmSync(`${path}${JOURNAL_SUFFIX}`);
    const fresh = open(path);
    await fresh.engine.init();
    expect(await fresh.store.scanRecords({ limit: 10 })).toEqual([]);
  });

  it("acknowledges a recall's accesses and audit event once journaled, and a reopened store has them", async () => {
    const path = file('recall-crash.duckdb');
    const lines = await rememberAndCrash<{ id?: string; ids?: string[]; journaled?: boolean }>(
      path,
      ['apples and pears', 'apples and plums', 'cherries', 'recall:apples'],
    );
    expect(lines.at(-1)).toEqual({ ids: ['id-000001', 'id-000003'], journaled: true });
    const { store, engine } = open(path);
    await engine.init();
    const found = await store.get(AGENT, ['id-000001', 'id-000003', 'id-000005']);
    expect(
      found.map(({ record }) => [record.id, record.accessCount, record.lastAccessedAt]),
    ).toEqual([
      ['id-000001', 1, new Date('2026-01-01T00:00:00.000Z')],
      ['id-000003', 1, new Date('2026-01-01T00:00:00.000Z')],
      ['id-000005', 0, null],
    ]);
    const audit = await engine.verifyAudit();
    expect([audit.ok, audit.events]).toEqual([true, 4]);
    const events = await store.readAudit({ limit: 10 });
    expect(events.map((event) => [event.op, event.recordIds])).toEqual([
      ['remember', ['id-000001']],
      ['remember', ['id-000003']],
      ['remember', ['id-000005']],
      ['recall', ['id-000001', 'id-000003']],
    ]);
  });

  it('numbers frames on from the last one applied when it opens an empty journal, so a crash after keeps them', async () => {
    const path = file('numbered.duckdb');
    const issued = ['r-1', 'e-1', 'r-2', 'e-2'];
    const first = open(path, () => issued.shift() as string);
    await first.engine.init();
    await first.engine.as('agent-a').remember({ content: 'on the file' });
    await first.engine.as('agent-a').remember({ content: 'journaled, then applied' });
    const bytes = journalBytes(path);
    await first.store.close();
    expect([bytes > 0, existsSync(`${path}${JOURNAL_SUFFIX}`)]).toEqual([true, false]);
    // Another process: its first remember runs on the file, its second is journaled only.
    await rememberAndCrash(path, ['third fact', 'fourth fact']);
    expect(journalBytes(path)).toBeGreaterThan(0);
    const { store, engine } = open(path);
    await engine.init();
    const listed = await store.list({ visibility: AGENT, filters: {} });
    expect(listed.map(({ record }) => [record.id, record.content])).toEqual([
      ['id-000001', 'third fact'],
      ['id-000003', 'fourth fact'],
      ['r-1', 'on the file'],
      ['r-2', 'journaled, then applied'],
    ]);
    const audit = await engine.verifyAudit();
    expect([audit.ok, audit.events]).toEqual([true, 4]);
  });

  it('drops a frame a crash cut off, applies the whole ones before it, and appends after them', async () => {
    const path = file('torn.duckdb');
    await rememberAndCrash(path, ['alpha', 'beta', 'gamma']);
    const whole = journalBytes(path);
    // A frame whose header promises 100 bytes, of which 10 reached the disk.
    const torn = Buffer.alloc(22);
    torn.writeUInt32LE(100, 0);
    appendFileSync(`${path}${JOURNAL_SUFFIX}`, torn);
    const first = open(path);
    await first.engine.init();
    await first.engine.as('agent-a').remember({ content: 'delta' });
    await first.store.close();
    const second = open(path);
    await second.engine.init();
    const listed = await second.store.list({ visibility: AGENT, filters: {} });
    expect(listed.map(({ record }) => record.content).sort()).toEqual([
      'alpha',
      'beta',
      'delta',
      'gamma',
    ]);
    const audit = await second.engine.verifyAudit();
    expect([whole > 0, audit.ok, audit.events]).toEqual([true, true, 4]);
  });

  describe('with the timer that applies pending frames stopped', () => {
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('deduplicates against a pending record, and a read applies the frames first', async () => {
      const path = file('pending.duckdb');
      const { engine } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      await a.remember({ content: 'on the file' });
      const pending = await a.remember({ content: 'in the journal' });
      const bytes = journalBytes(path);
      const again = await a.remember({ content: 'in the journal' });
      expect([bytes > 0, journalBytes(path) === bytes]).toEqual([true, true]);
      expect(again).toEqual({ ...pending, deduplicated: true });
      expect((await a.get(pending.id)).content).toBe('in the journal');
      expect(journalBytes(path)).toBe(0);
    });

    it('deduplicates no more against a pending record once it is applied and forgotten', async () => {
      const path = file('forgotten.duckdb');
      const { engine } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      await a.remember({ content: 'on the file' });
      const pending = await a.remember({ content: 'in the journal' });
      const bytes = journalBytes(path);
      // A forget runs on the file, after the pending frame.
      expect(await a.forget({ ids: [pending.id] })).toEqual({
        mode: 'soft',
        forgotten: [pending.id],
      });
      const again = await a.remember({ content: 'in the journal' });
      expect([bytes > 0, again.deduplicated, again.id === pending.id]).toEqual([
        true,
        false,
        false,
      ]);
      expect((await a.get(again.id)).content).toBe('in the journal');
    });

    it('deduplicates against the smallest id when live duplicates are pending and on the file', async () => {
      const path = file('two-live.duckdb');
      const { store, engine, clock } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      const expiresAt = new Date('2026-01-02T00:00:01.000Z');
      const onFile = await a.remember({ content: 'one fact', expiresAt });
      clock.advance(1000);
      const pending = await a.remember({ content: 'one fact' });
      // A clock set back (as a system clock may be) makes the first one live again beside it.
      clock.set('2026-01-02T00:00:00.000Z');
      const bytes = journalBytes(path);
      expect([onFile.id < pending.id, bytes > 0]).toEqual([true, true]);
      expect(await a.remember({ content: 'one fact' })).toEqual({ ...onFile, deduplicated: true });
      // Both on the file.
      await store.list({ visibility: AGENT, filters: {} });
      expect(journalBytes(path)).toBe(0);
      expect(await a.remember({ content: 'one fact' })).toEqual({ ...onFile, deduplicated: true });
    });

    it('deduplicates against a pending record applied to the file while the lookup reads it', async () => {
      const path = file('applied-meanwhile.duckdb');
      const { store, engine } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      await a.remember({ content: 'on the file' });
      const pending = await a.remember({ content: 'in the journal' });
      // The lookup reads a snapshot of the file taken before the frame is applied; the frame
      // leaves the pending ones before the lookup's answer comes back.
      const reads = store as unknown as { readCommitted<T>(fn: unknown): Promise<T> };
      const readCommitted = reads.readCommitted.bind(store);
      let appliedDuringRead = false;
      reads.readCommitted = async <T>(fn: unknown) => {
        const result = await readCommitted<T>(fn);
        if (!appliedDuringRead) {
          await vi.advanceTimersByTimeAsync(100);
          while (journalBytes(path) > 0) await new Promise((resolve) => setImmediate(resolve));
          appliedDuringRead = true;
        }
        return result;
      };
      const again = await a.remember({ content: 'in the journal' });
      expect(appliedDuringRead).toBe(true);
      expect(again).toEqual({ ...pending, deduplicated: true });
      expect((await store.scanRecords({ limit: 10 })).map((record) => record.content)).toEqual([
        'on the file',
        'in the journal',
      ]);
    });

    it("journals a recall's accesses and audit event; reads count the accesses without applying the frame", async () => {
      const path = file('recall.duckdb');
      const { engine } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      // The first write of a file runs on it.
      const { id } = await a.remember({ content: 'apples and pears' });
      expect(journalBytes(path)).toBe(0);
      const first = await a.recall({ query: 'apples', strategy: 'lexical' });
      expect(first.hits.map((hit) => [hit.record.id, hit.record.accessCount])).toEqual([[id, 0]]);
      const bytes = journalBytes(path);
      const read = await a.get(id);
      expect([bytes > 0, journalBytes(path) === bytes]).toEqual([true, true]);
      expect([read.accessCount, read.lastAccessedAt]).toEqual([
        1,
        new Date('2026-01-02T00:00:00.000Z'),
      ]);
      const second = await a.recall({ query: 'apples', strategy: 'lexical' });
      expect(second.hits.map((hit) => hit.record.accessCount)).toEqual([1]);
      expect(journalBytes(path)).toBeGreaterThan(bytes);
      expect((await a.get(id)).accessCount).toBe(2);
      // A read of the audit log applies the frames first.
      const audit = await engine.verifyAudit();
      expect([audit.ok, audit.events, journalBytes(path)]).toEqual([true, 3, 0]);
      expect((await a.get(id)).accessCount).toBe(2);
      // A recall before any write of a reopened store, which has not read its records' keys.
      await engine.close();
      const reopened = open(path);
      await reopened.engine.init();
      await reopened.engine.as('agent-a').recall({ query: 'apples', strategy: 'lexical' });
      expect(journalBytes(path)).toBeGreaterThan(0);
      expect((await reopened.engine.as('agent-a').get(id)).accessCount).toBe(3);
    });

    it('fails every call once applying the journal fails, keeps the writes in it, and a reopened store applies them', async () => {
      const path = file('apply-fails.duckdb');
      const { store, engine } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      await a.remember({ content: 'on the file' });
      await a.remember({ content: 'in the journal' });
      // The next COMMIT, the one applying the frame, fails as a full disk would fail it.
      const writer = (store as unknown as { writer: Session }).writer;
      const exec = writer.exec.bind(writer);
      let failures = 0;
      writer.exec = async (sql, params) => {
        if (sql === 'COMMIT' && failures === 0) {
          failures += 1;
          throw mapDuckDBError(new Error('IO Error: No space left on device'), 'statement');
        }
        return exec(sql, params);
      };
      const visibility = AGENT;
      const listing = await store.list({ visibility, filters: {} }).catch((e: MnemoError) => e);
      expect(listing).toMatchObject({
        code: 'STORE_UNAVAILABLE',
        message: `DuckDB: applying the journal to ${path} failed (DuckDB: statement failed: IO Error: No space left on device); the acknowledged writes stay in the journal, and reopening the store applies them`,
      });
      // Later calls fail with it, writes included, though the disk would take them now.
      await expect(a.remember({ content: 'after' })).rejects.toBe(listing);
      await expect(store.list({ visibility, filters: {} })).rejects.toBe(listing);
      await store.close();
      expect([failures, journalBytes(path) > 0]).toEqual([1, true]);
      const reopened = open(path);
      await reopened.engine.init();
      const listed = await reopened.store.list({ visibility, filters: {} });
      expect(listed.map(({ record }) => record.content)).toEqual(['on the file', 'in the journal']);
      expect([journalBytes(path), (await reopened.engine.verifyAudit()).events]).toEqual([0, 2]);
    });

    it("reads the audit heads with a recall's pending event", async () => {
      const path = file('heads.duckdb');
      const { store, engine } = open(path);
      await engine.init();
      const a = engine.as('agent-a');
      // The first write of a file runs on it; the recall's event is journaled.
      await a.remember({ content: 'apples and pears' });
      await a.recall({ query: 'apples', strategy: 'lexical' });
      const bytes = journalBytes(path);
      const heads = await store.auditHeads();
      const events = await store.readAudit({ limit: 10 });
      expect(events.map((event) => [event.op, event.seq])).toEqual([
        ['remember', 1],
        ['recall', 2],
      ]);
      expect([bytes > 0, heads]).toEqual([
        true,
        [{ chain: events[1]?.chain, seq: 2, hash: events[1]?.hash }],
      ]);
    });

    it('journals no touch of a transaction that fails, and moves one that reads after touching onto the file with its touch', async () => {
      const path = file('touch-moved.duckdb');
      const { store, engine } = open(path);
      await engine.init();
      const { id } = await engine.as('agent-a').remember({ content: 'apples' });
      const at = new Date('2026-01-03T00:00:00.000Z');
      await expect(
        store.transaction(async (tx) => {
          await tx.touch([id], at);
          throw new Error('changed its mind');
        }),
      ).rejects.toThrow('changed its mind');
      const seen = await store.transaction(async (tx) => {
        await tx.touch([id, id], at);
        const [read] = await tx.get(AGENT, [id]);
        return [read?.record.accessCount, read?.record.lastAccessedAt];
      });
      expect([seen, journalBytes(path)]).toEqual([[1, at], 0]);
      const [after] = await store.get(AGENT, [id]);
      expect([after?.record.accessCount, after?.record.lastAccessedAt]).toEqual([1, at]);
    });

    it('fails a record id already taken as the file does, whether the id is pending or on the file', async () => {
      const path = file('ids.duckdb');
      // Record and audit event ids, in the order remembers take them (a failed one takes no
      // event id).
      const issued = ['r-1', 'e-1', 'r-2', 'e-2', 'r-2', 'r-1', 'r-3', 'e-3'];
      const ids: IdGenerator = () => issued.shift() as string;
      const { store, engine } = open(path, ids);
      await engine.init();
      const a = engine.as('agent-a');
      await a.remember({ content: 'one' });
      await a.remember({ content: 'two' });
      const pendingBytes = journalBytes(path);
      await expect(a.remember({ content: 'three' })).rejects.toMatchObject({ code: 'INTERNAL' });
      await expect(a.remember({ content: 'four' })).rejects.toMatchObject({ code: 'INTERNAL' });
      await a.remember({ content: 'five' });
      const listed = await store.list({ visibility: AGENT, filters: {} });
      expect(listed.map(({ record }) => [record.id, record.content])).toEqual([
        ['r-1', 'one'],
        ['r-2', 'two'],
        ['r-3', 'five'],
      ]);
      const audit = await engine.verifyAudit();
      expect([pendingBytes > 0, audit.ok, audit.events]).toEqual([true, true, 3]);
    });
  });

  it('fails a transaction inserting one id twice as the file does, journals nothing and stays usable', async () => {
    const path = file('same-id.duckdb');
    const { store, engine } = open(path);
    await engine.init();
    // The first write of a file runs on it, and loads its keys: the next ones are journaled.
    await engine.as('agent-a').remember({ content: 'on the file' });
    const item = (content: string, id = 'twice'): NewRecord => ({
      record: memoryRecord({ id, agentId: 'agent-a', content }),
      dedupKey: createHash('sha256').update(content).digest('hex'),
      isPlan: false,
      terms: [{ term: content, tf: 1 }],
      docLength: 1,
      planTokens: null,
    });
    // In one call, and in two calls of one transaction.
    await expect(
      store.transaction((tx) => tx.insertRecords([item('one'), item('two')])),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    await expect(
      store.transaction(async (tx) => {
        await tx.insertRecords([item('one')]);
        await tx.insertRecords([item('two')]);
      }),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    expect(journalBytes(path)).toBe(0);
    await store.transaction((tx) => tx.insertRecords([item('three', 'once')]));
    expect(journalBytes(path)).toBeGreaterThan(0);
    const listed = await store.list({ visibility: AGENT, filters: {} });
    expect(listed.map(({ record }) => record.content)).toEqual(['on the file', 'three']);
  });

  it('refuses to open when a frame cannot be applied, and leaves the file and the journal as they were', async () => {
    const path = file('forged.duckdb');
    const first = open(path);
    await first.engine.init();
    const { id } = await first.engine.as('agent-a').remember({ content: 'on the file' });
    await first.store.close();
    // A frame no store would write: a record whose id the file already holds.
    const { journal } = Journal.open(`${path}${JOURNAL_SUFFIX}`);
    journal.append({
      seq: 1,
      records: [
        {
          record: memoryRecord({ id, agentId: 'agent-a', content: 'forged' }),
          dedupKey: 'f'.repeat(64),
          isPlan: false,
          terms: [{ term: 'forged', tf: 1 }],
          docLength: 1,
          planTokens: null,
        },
      ],
      accesses: [],
      events: [],
    });
    journal.close(false);
    const bytes = journalBytes(path);
    const second = open(path);
    await expect(second.engine.init()).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringContaining(`applying the journal ${path}${JOURNAL_SUFFIX}`),
    });
    expect(journalBytes(path)).toBe(bytes);
    // Without the journal, the file opens with what it had.
    rmSync(`${path}${JOURNAL_SUFFIX}`);
    const third = open(path);
    await third.engine.init();
    const listed = await third.store.list({ visibility: AGENT, filters: {} });
    expect(listed.map(({ record }) => [record.id, record.content])).toEqual([[id, 'on the file']]);
  });

  it('cuts off the part of a frame whose write failed, so that the next frame follows the last whole one', async () => {
    const path = file('limited.mnemo-journal');
    // A child process whose files may not grow past 4 blocks (2 or 4 KiB, by shell), with
    // SIGXFSZ ignored so that a write past the limit fails (EFBIG) instead of killing it.
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        'sh',
        [
          '-c',
          'trap "" XFSZ; ulimit -f 4; exec "$0" "$1" "$2"',
          process.execPath,
          join(here, 'fixtures', 'journal-size-limit.mjs'),
          path,
        ],
        (error, stdout, stderr) =>
          error ? reject(new Error(stderr || String(error))) : resolve(stdout),
      );
    });
    expect(JSON.parse(output)).toEqual(['ok', 'STORE_UNAVAILABLE', 'ok']);
    const { journal, frames } = Journal.open(path);
    journal.close(false);
    expect(frames.map((frame) => frame.seq)).toEqual([1, 3]);
  });

  it('reads a frame written before accesses were journaled as one with none', () => {
    const path = file('old-frame.mnemo-journal');
    const event = {
      id: 'e-1',
      chain: 'agent-a|',
      seq: 1,
      at: Date.parse('2026-01-02T00:00:00.000Z'),
      principal: 'agent-a|',
      op: 'remember',
      recordIds: [],
      details: {},
      prevHash: '0'.repeat(64),
      hash: 'f'.repeat(64),
    };
    const payload = Buffer.from(JSON.stringify({ seq: 4, records: [], events: [event] }));
    const header = Buffer.alloc(12);
    header.writeUInt32LE(payload.length, 0);
    createHash('sha256').update(payload).digest().copy(header, 4, 0, 8);
    appendFileSync(path, Buffer.concat([header, payload]));
    const { journal, frames } = Journal.open(path);
    journal.close(false);
    expect(frames).toEqual([
      { seq: 4, records: [], accesses: [], events: [{ ...event, at: new Date(event.at) }] },
    ]);
  });

  it('stops at a frame that fails its checksum, as a crash leaves zeros or a torn write, and cuts it off', () => {
    const path = file('checksums.mnemo-journal');
    const frame = (seq: number): JournalFrame => ({
      seq,
      records: [],
      accesses: [{ ids: ['r-1'], at: new Date('2026-01-02T00:00:00.000Z'), touch: seq }],
      events: [],
    });
    const created = Journal.open(path);
    created.journal.append(frame(1));
    created.journal.close(false);
    const whole = statSync(path).size;
    // Zeros where the size grew and the data never came (a header of length 0), then a frame
    // whose last byte changed.
    appendFileSync(path, Buffer.alloc(64));
    const first = Journal.open(path);
    first.journal.close(false);
    expect([first.frames, statSync(path).size]).toEqual([[frame(1)], whole]);
    const again = Journal.open(path);
    again.journal.append(frame(2));
    again.journal.close(false);
    const bytes = readFileSync(path);
    bytes.writeUInt8((bytes.at(-1) as number) ^ 1, bytes.length - 1);
    writeFileSync(path, bytes);
    const second = Journal.open(path);
    second.journal.close(false);
    expect([second.frames, statSync(path).size]).toEqual([[frame(1)], whole]);
  });

  it('reads back the frames it appended, exactly, and cuts a torn one off the file', () => {
    const path = file('frames.mnemo-journal');
    const record = memoryRecord({
      id: 'r-9',
      content: 'embedded',
      embedding: new Float32Array([0.5, -1.25, 3e-8, 0]),
      tags: ['t'],
      metadata: { nested: { list: [1, 'two', null] } },
      expiresAt: new Date('2031-02-03T04:05:06.789Z'),
    });
    const item: NewRecord = {
      record,
      dedupKey: 'k'.repeat(64),
      isPlan: false,
      terms: [{ term: 'embedded', tf: 1 }],
      docLength: 1,
      planTokens: null,
    };
    const event: AuditEvent = {
      id: 'e-9',
      chain: 'agent-a|',
      seq: 7,
      at: new Date('2026-01-02T00:00:00.001Z'),
      principal: 'agent-a|',
      op: 'remember',
      recordIds: ['r-9'],
      details: { scope: 'private' },
      prevHash: '0'.repeat(64),
      hash: 'f'.repeat(64),
    };
    const frames: JournalFrame[] = [
      { seq: 1, records: [item], accesses: [], events: [event] },
      {
        seq: 2,
        records: [],
        accesses: [{ ids: ['r-9', 'r-1'], at: new Date('2026-01-02T00:00:01.002Z'), touch: 3 }],
        events: [{ ...event, seq: 8, op: 'recall', recordIds: ['r-9', 'r-1'] }],
      },
    ];
    const created = Journal.open(path);
    expect(created.frames).toEqual([]);
    for (const frame of frames) created.journal.append(frame);
    created.journal.close(false);
    const size = statSync(path).size;
    appendFileSync(path, Buffer.from([5, 0, 0, 0, 1, 2, 3]));
    const reopened = Journal.open(path);
    expect(reopened.frames).toEqual(frames);
    expect(reopened.frames[0]?.records[0]?.record.embedding).toBeInstanceOf(Float32Array);
    expect(statSync(path).size).toBe(size);
    reopened.journal.clear();
    expect(statSync(path).size).toBe(0);
    reopened.journal.close(true);
    expect(statSync(path, { throwIfNoEntry: false })).toBeUndefined();
  });
});
