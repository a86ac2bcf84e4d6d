import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  createEngine,
  type Embedder,
  type MemoryStore,
  type RecordFilters,
  type ScoredRecord,
  type Visibility,
} from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { afterRestart, QUESTIONS, texts } from './cache-fixture.js';
import { describePostgres, dropSchema, PG_URL, PGVECTOR_URL, uniqueSchema } from './database.js';
import { postgresBinDir, startDedicatedServer } from './dedicated-server.js';

// A vector search without filters finds its candidates on codes held in the process
// (`vectorIndex: 'memory'`, the default) while other processes write: here other stores on the
// same schema, and raw transactions. Every answer must equal the full scan's (`vectorIndex: 'sql'`).

const DIMENSIONS = 64;
const embedder = createHashEmbedder({ dimensions: DIMENSIONS });

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function store(
  url: string,
  schema: string,
  vectorIndex: 'memory' | 'sql',
  preloadSearchIndex = vectorIndex === 'memory',
): MemoryStore {
  const opened = createPostgresStore({
    connectionString: url,
    schema,
    vectorDimensions: DIMENSIONS,
    vectorIndex,
    preloadSearchIndex,
    maxConnections: 3,
    connectionTimeoutMs: 5_000,
  });
  cleanup.push(() => opened.close());
  return opened;
}

/** A writer engine and two readers on one new schema: one from memory, one scanning in SQL. */
async function setUp(url: string) {
  const schema = uniqueSchema('vector_cache');
  cleanup.push(() => dropSchema(schema, url));
  const engine = createEngine({
    store: store(url, schema, 'memory'),
    embedder,
    readAuditing: false,
  });
  await engine.init();
  const memory = store(url, schema, 'memory');
  const sql = store(url, schema, 'sql');
  await memory.init();
  await sql.init();
  return { schema, engine, memory, sql };
}

const answer = (hits: readonly ScoredRecord[]) =>
  hits.map((hit) => [hit.record.content, hit.record.id, hit.score]);

/** Asks every question of both readers as `visibility` and expects the same answers, returned. */
async function same(
  memory: MemoryStore,
  sql: MemoryStore,
  visibility: Visibility,
  limit = 5,
  questions = QUESTIONS,
  filters: RecordFilters = {},
): Promise<(string | number)[][][]> {
  const answers = [];
  for (const question of questions) {
    const [vector] = await embedder.embed([question]);
    const query = { visibility, filters, vector: vector as Float32Array, limit };
    const fromMemory = answer(await memory.searchVector(query));
    expect(fromMemory).toEqual(answer(await sql.searchVector(query)));
    answers.push(fromMemory);
  }
  return answers;
}

/**
 * An INSERT of a copy of record `$1` with the id `copyId`, written by this transaction
 * (`written_xid` its id, as the column's default sets it) or by none (NULL).
 */
function copyRecord(schema: string, copyId: string, writtenBy: 'this' | 'none'): string {
  const t = `"${schema}".mnemo_records`;
  const xid = writtenBy === 'this' ? 'pg_current_xact_id()::text' : 'NULL';
  return `INSERT INTO ${t} SELECT (jsonb_populate_record(NULL::${t},
    to_jsonb(r) || jsonb_build_object('id', '${copyId}', 'written_xid', ${xid}))).*
    FROM ${t} r WHERE id = $1`;
}

const run = promisify(execFile);
const bin = postgresBinDir();

const urls: [string, string | undefined][] = [
  ['pgvector', PGVECTOR_URL],
  ['real[]', PG_URL],
];

describePostgres('vector search from memory', () => {
  for (const [kind, url] of urls) {
    it.skipIf(url === undefined)(
      `answers as the full scan while other stores write and forget (${kind})`,
      async () => {
        const { engine, memory, sql } = await setUp(url as string);
        const a = engine.as('agent-a');
        const now = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
        await a.rememberMany(texts(1, 150, 5).map((content) => ({ content })));
        await engine
          .as('agent-b')
          .rememberMany(texts(2, 50, 5).map((content) => ({ content, scope: 'global' as const })));
        await same(memory, sql, now());

        // Written after the reader loaded: the questions themselves, each now the best match.
        const added = await a.rememberMany(QUESTIONS.map((content) => ({ content })));
        const answers = await same(memory, sql, now());
        expect(answers.map((hits) => hits[0]?.[0])).toEqual(QUESTIONS);

        // Forgotten in each mode: gone from the answers.
        const [soft, hard, redacted] = added.map((result) => result.id);
        await a.forget({ ids: [soft as string] });
        await a.forget({ ids: [hard as string], mode: 'hard' });
        await a.forget({ ids: [redacted as string], mode: 'redact' });
        const after = await same(memory, sql, now());
        for (const hits of after) {
          for (const [, id] of hits) expect([soft, hard, redacted]).not.toContain(id);
        }
        expect(after.slice(3).map((hits) => hits[0]?.[0])).toEqual(QUESTIONS.slice(3));

        // Expiring records: in the answers until they expire.
        const soon = new Date(Date.now() + 60_000);
        await a.remember({ content: 'dog park soon', expiresAt: soon });
        const before = await same(memory, sql, now());
        expect(before[0]?.map(([content]) => content)).toContain('dog park soon');
        const expired = await same(memory, sql, { ...now(), now: new Date(soon.getTime() + 1) });
        expect(expired[0]?.map(([content]) => content)).not.toContain('dog park soon');
      },
    );
  }

  for (const [kind, url] of urls) {
    it.skipIf(url === undefined)(
      `lets a search running when close() is called finish, the codes loading or loaded (${kind})`,
      async () => {
        const { schema, engine, sql } = await setUp(url as string);
        await engine.as('agent-a').rememberMany(texts(5, 40, 5).map((content) => ({ content })));
        const [vector] = await embedder.embed(['dog park']);
        const query = {
          visibility: { agentId: 'agent-a', orgId: null, now: new Date() },
          filters: {},
          vector: vector as Float32Array,
          limit: 5,
        };
        const expected = answer(await sql.searchVector(query));
        expect(expected).toHaveLength(5);
        // Not preloaded, the search starts the load and answers in SQL, and close() stops the
        // load; preloaded, it refreshes the codes and checks candidates.
        for (const preloaded of [false, true]) {
          const memory = store(url as string, schema, 'memory', preloaded);
          await memory.init();
          const search = memory.searchVector(query);
          await memory.close();
          expect(answer(await search)).toEqual(expected);
          await expect(memory.searchVector(query)).rejects.toMatchObject({
            code: 'STORE_UNAVAILABLE',
          });
        }
      },
    );
  }

  it.skipIf(PGVECTOR_URL === undefined)(
    'answers callers who see few of the records, shared ones included',
    async () => {
      const { engine, memory, sql } = await setUp(PGVECTOR_URL as string);
      // agent-a's private records are most of the store, and the best matches.
      await engine
        .as('agent-a')
        .rememberMany([...QUESTIONS, ...texts(3, 200, 5)].map((content) => ({ content })));
      const c = engine.as('agent-c', { orgId: 'acme' });
      await c.rememberMany(texts(4, 8, 5).map((content) => ({ content })));
      const d = engine.as('agent-d', { orgId: 'acme' });
      const shared = await d.remember({ content: 'dog park bird', scope: 'shared' });
      await d.share({ recordId: shared.id, with: ['agent-c'] });
      await d.remember({ content: 'dog park cat', scope: 'shared' });
      // Shared records not shared with agent-c: candidates in memory (grants are SQL's to
      // check), and the best matches, so they alone cannot prove a top.
      await d.rememberMany(
        [...QUESTIONS, ...texts(6, 60, 5)].map((content) => ({
          content: `${content} x`,
          scope: 'shared' as const,
        })),
      );
      await d.remember({ content: 'dog park fish', scope: 'public' });
      await engine.as('agent-e', { orgId: 'other' }).remember({ content: 'dog', scope: 'public' });
      const answers = await same(
        memory,
        sql,
        { agentId: 'agent-c', orgId: 'acme', now: new Date() },
        10,
      );
      const contents = answers.flat().map(([content]) => content);
      expect(contents).toContain('dog park bird');
      expect(contents).toContain('dog park fish');
      expect(contents).not.toContain('dog park cat');
      expect(contents).not.toContain('dog');
      expect(contents).not.toContain('dog park');
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    "answers with the caller's own nearest records when the nearest of all are hidden from it",
    async () => {
      const { engine, memory, sql } = await setUp(PGVECTOR_URL as string);
      // agent-d's records are the nearest to both questions: its shared ones (not shared with
      // agent-c) are candidates in memory, whose grants SQL checks; its private ones are not.
      const d = engine.as('agent-d', { orgId: 'acme' });
      const nearest = ['dog park', 'park dog', 'dog park dog park', 'bird lake', 'lake bird'];
      for (const scope of ['shared', 'private'] as const)
        await d.rememberMany(nearest.map((content) => ({ content, scope })));
      const c = engine.as('agent-c', { orgId: 'acme' });
      // Others of its own, with none of the questions' words.
      const others = texts(17, 300, 5).filter((text) => !/dog|park|bird|lake/.test(text));
      await c.rememberMany(others.map((content) => ({ content })));
      const own = [
        'dog park',
        'dog dog park',
        'dog park river',
        'dog park river lake',
        'bird lake river',
        'bird lake river hill',
        'bird river',
      ];
      const ids = new Map(
        (await c.rememberMany(own.map((content) => ({ content })))).map((r, i) => [own[i], r.id]),
      );
      // agent-c's own 'dog park' ties the hidden ones and is a candidate with them, but one
      // record cannot prove a top 3; for 'bird lake' none of agent-c's is a candidate at first.
      const answers = await same(
        memory,
        sql,
        { agentId: 'agent-c', orgId: 'acme', now: new Date() },
        3,
        ['dog park', 'bird lake'],
      );
      const expected = (contents: string[]) =>
        contents.map((content) => [content, ids.get(content)]);
      expect(answers.map((hits) => hits.map(([content, id]) => [content, id]))).toEqual([
        expected(['dog park', 'dog dog park', 'dog park river']),
        expected(['bird lake river', 'bird lake river hill', 'bird river']),
      ]);
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'answers a top 1 hidden from the caller with its nearest record, not a farther candidate',
    async () => {
      // Vectors made so that the codes' bounds are known (the question is the first axis):
      // `hidden` is the question itself, so the bar is 1; `wide` scores 0.9995 but loses 0.03 to
      // its codes (63 small values that code to 0), so its upper bound reaches the bar and it is
      // a candidate; `nearest` scores 0.9999 and codes exactly, so it is not. Found among the
      // candidates, `wide` alone passes SQL: it cannot prove the top, and a deeper search finds
      // `nearest`.
      const axis = (values: Record<number, number>) => {
        const vector = new Float32Array(DIMENSIONS);
        for (const [i, value] of Object.entries(values)) vector[Number(i)] = value;
        return vector;
      };
      const small = (0.49 * 0.9995) / 127;
      const wide = axis({ 0: Math.sqrt(1 - 63 * small * small) });
      for (let i = 1; i < DIMENSIONS; i += 1) wide[i] = small;
      const vectors = new Map([
        ['question', axis({ 0: 1 })],
        ['hidden', axis({ 0: 1 })],
        ['wide', wide],
        ['nearest', axis({ 0: 127 / Math.hypot(127, 2), 1: 2 / Math.hypot(127, 2) })],
      ]);
      const table: Embedder = {
        dimensions: DIMENSIONS,
        semantic: true,
        maxBatchSize: 8,
        embed: async (contents) => contents.map((content) => vectors.get(content) as Float32Array),
      };
      const url = PGVECTOR_URL as string;
      const schema = uniqueSchema('vector_cache');
      cleanup.push(() => dropSchema(schema, url));
      const engine = createEngine({ store: store(url, schema, 'memory'), embedder: table });
      await engine.init();
      await engine
        .as('agent-d', { orgId: 'acme' })
        .remember({ content: 'hidden', scope: 'shared' });
      const c = engine.as('agent-c', { orgId: 'acme' });
      const [nearest, farther] = await c.rememberMany([
        { content: 'nearest' },
        { content: 'wide' },
      ]);
      const hits = await c.recall({ query: 'question', strategy: 'semantic', limit: 1 });
      expect(hits.hits.map((hit) => [hit.record.content, hit.record.id])).toEqual([
        ['nearest', nearest?.id],
      ]);
      const two = await c.recall({ query: 'question', strategy: 'semantic', limit: 2 });
      expect(two.hits.map((hit) => hit.record.id)).toEqual([nearest?.id, farther?.id]);
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'answers filtered searches as the full scan, whatever share of the records passes',
    async () => {
      const { engine, memory, sql } = await setUp(PGVECTOR_URL as string);
      const types = ['episodic', 'semantic', 'procedural'] as const;
      const start = Date.now();
      await engine.as('agent-a').rememberMany(
        [...QUESTIONS, ...texts(8, 300, 5)].map((content, i) => ({
          content,
          memoryType: types[i % 3],
          importance: (i % 100) / 100,
          tags: [i % 2 === 0 ? 'even' : 'odd', ...(i % 25 === 3 ? ['rare'] : [])],
        })),
      );
      await engine
        .as('agent-b')
        .rememberMany(texts(9, 40, 5).map((content) => ({ content, scope: 'global' as const })));
      const visibility = { agentId: 'agent-a', orgId: null, now: new Date() };
      const filters: RecordFilters[] = [
        { memoryTypes: ['semantic'] },
        { memoryTypes: ['episodic', 'procedural'], minImportance: 0.5 },
        { scopes: ['global'] },
        { tagsAny: ['rare'] },
        { tagsAll: ['odd', 'rare'] },
        { tagsAny: ['none'] },
        { minImportance: 0.99 },
        { createdAfter: new Date(start - 60_000), createdBefore: new Date(Date.now() + 60_000) },
        { createdAfter: new Date(Date.now() + 60_000) },
      ];
      const counts = [];
      for (const f of filters) {
        const answers = await same(memory, sql, visibility, 10, QUESTIONS, f);
        counts.push(answers.map((hits) => hits.length));
      }
      // Filters most records fail leave fewer than ten (a few texts repeat, and a repeat keeps
      // the first one's tags); none leaves nothing.
      expect(counts).toEqual([
        [10, 10, 10, 10, 10],
        [10, 10, 10, 10, 10],
        [10, 10, 10, 10, 10],
        [10, 10, 10, 10, 10],
        [6, 6, 6, 6, 6],
        [0, 0, 0, 0, 0],
        [3, 3, 3, 3, 3],
        [10, 10, 10, 10, 10],
        [0, 0, 0, 0, 0],
      ]);
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'answers from memory: a row written without its transaction id after the load is not seen',
    async () => {
      // White-box: proves the answers come from the codes (rows written before schema version
      // 7 carry no transaction id either, and are read by the first load only).
      const url = PGVECTOR_URL as string;
      const { schema, engine, memory, sql } = await setUp(url);
      const { id } = await engine.as('agent-a').remember({ content: 'bird' });
      await same(memory, sql, { agentId: 'agent-a', orgId: null, now: new Date() });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      cleanup.push(() => client.end());
      // As a row written before version 7 (the triggers of version 8 would give it this
      // transaction's id).
      await client.query(`ALTER TABLE "${schema}".mnemo_records DISABLE TRIGGER USER`);
      await client.query(copyRecord(schema, 'unseen-bird', 'none'), [id]);
      await client.query(`ALTER TABLE "${schema}".mnemo_records ENABLE TRIGGER USER`);
      const [vector] = await embedder.embed(['bird']);
      const query = {
        visibility: { agentId: 'agent-a', orgId: null, now: new Date() },
        filters: {},
        vector: vector as Float32Array,
        limit: 5,
      };
      const ids = async (from: MemoryStore) =>
        (await from.searchVector(query)).map((hit) => hit.record.id);
      expect(await ids(memory)).toEqual([id]);
      expect(await ids(sql)).toEqual([id, 'unseen-bird']);
      // Filters are checked on the candidates, except a thread's: its index serves SQL.
      const filtered = { ...query, filters: { memoryTypes: ['episodic' as const] } };
      expect((await memory.searchVector(filtered)).map((hit) => hit.record.id)).toEqual([id]);
      const threadless = { ...query, filters: { threadId: 'none' } };
      expect(await memory.searchVector(threadless)).toEqual([]);
      await client.query(
        `UPDATE "${schema}".mnemo_records SET thread_id = 't' WHERE id IN ($1, 'unseen-bird')`,
        [id],
      );
      const inThread = { ...query, filters: { threadId: 't' } };
      expect((await memory.searchVector(inThread)).map((hit) => hit.record.id)).toEqual([
        id,
        'unseen-bird',
      ]);
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'finds records restored from a copy, with the transaction ids of their first writing or none',
    async () => {
      const url = PGVECTOR_URL as string;
      const { schema, engine, memory, sql } = await setUp(url);
      const a = engine.as('agent-a');
      const lost = await a.rememberMany(
        ['bird', 'fish', 'bird lake'].map((content) => ({ content })),
      );
      await engine.as('agent-b').remember({ content: 'bird' });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      cleanup.push(() => client.end());
      const t = `"${schema}".mnemo_records`;
      await client.query(`CREATE TABLE "${schema}".backup AS SELECT * FROM ${t}`);
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      await same(memory, sql, visibility(), 5, ['bird']);
      // Deleted outright; searches for the best one find their candidates gone, so the codes
      // drop them.
      const ids = lost.map((r) => r.id);
      await a.forget({ ids, mode: 'hard' });
      expect(await same(memory, sql, visibility(), 1, ['bird', 'bird lake', 'fish'])).toEqual([
        [],
        [],
        [],
      ]);
      // Back as a data-only restore writes them: every column as it was (one of them as
      // logical replication applies a row, in a session of replication role `replica`), or
      // without the writing transaction's id (a copy from before schema version 7).
      await client.query(`INSERT INTO ${t} SELECT * FROM "${schema}".backup WHERE id = $1`, [
        ids[0],
      ]);
      await client.query('BEGIN');
      await client.query('SET LOCAL session_replication_role = replica');
      await client.query(`INSERT INTO ${t} SELECT * FROM "${schema}".backup WHERE id = $1`, [
        ids[1],
      ]);
      await client.query('COMMIT');
      await client.query(
        `INSERT INTO ${t} SELECT (jsonb_populate_record(NULL::${t},
           to_jsonb(b) || '{"written_xid": null}'::jsonb)).* FROM "${schema}".backup b WHERE id = $1`,
        [ids[2]],
      );
      const [birds] = await same(memory, sql, visibility(), 5, ['bird']);
      expect(birds?.map(([, id]) => id)).toEqual([ids[0], ids[2], ids[1]]);
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'finds a record brought back by an update of its deletion or expiry',
    async () => {
      const url = PGVECTOR_URL as string;
      const { schema, engine, memory, sql } = await setUp(url);
      const a = engine.as('agent-a');
      const soon = new Date(Date.now() + 60_000);
      const { id: bird } = await a.remember({ content: 'bird' });
      const { id: fish } = await a.remember({ content: 'fish', expiresAt: soon });
      await engine.as('agent-b').remember({ content: 'bird fish' });
      const later = { agentId: 'agent-a', orgId: null, now: new Date(soon.getTime() + 1) };
      expect(await same(memory, sql, later, 5, ['bird fish'])).toEqual([
        [['bird', bird, expect.any(Number)]],
      ]);
      // Forgotten; a search for the best one finds its candidate gone, so the codes drop it.
      await a.forget({ ids: [bird] });
      expect(await same(memory, sql, later, 1, ['bird fish'])).toEqual([[]]);
      // By hand, as an operator would undo a forget or lift an expiry.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      cleanup.push(() => client.end());
      const t = `"${schema}".mnemo_records`;
      await client.query(`UPDATE ${t} SET deleted_at = NULL WHERE id = $1`, [bird]);
      await client.query(`UPDATE ${t} SET expires_at = NULL WHERE id = $1`, [fish]);
      const [both] = await same(memory, sql, later, 5, ['bird fish']);
      expect(both?.map(([, id]) => id).sort()).toEqual([bird, fish].sort());
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'searches a record deleted outright and written again under its id by its new embedding',
    async () => {
      const url = PGVECTOR_URL as string;
      const { schema, engine, memory, sql } = await setUp(url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(7, 50, 5).map((content) => ({ content })));
      const [bird, fish] = await a.rememberMany([{ content: 'bird' }, { content: 'fish' }]);
      const visibility = { agentId: 'agent-a', orgId: null, now: new Date() };
      await same(memory, sql, visibility, 5, ['fish']);
      // As an import of an edited export would: the id of 'bird', the content and embedding of 'fish'.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      cleanup.push(() => client.end());
      await client.query('BEGIN');
      await client.query(`DELETE FROM "${schema}".mnemo_records WHERE id = $1`, [bird?.id]);
      await client.query(copyRecord(schema, bird?.id as string, 'this'), [fish?.id]);
      await client.query('COMMIT');
      const [fishes] = await same(memory, sql, visibility, 5, ['fish']);
      expect(fishes?.slice(0, 2).map(([content, id]) => [content, id])).toEqual(
        [
          ['fish', bird?.id],
          ['fish', fish?.id],
        ].sort((x, y) => ((x[1] as string) < (y[1] as string) ? -1 : 1)),
      );
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'answers as of one snapshot when records are written and deleted between refresh and check',
    async () => {
      const url = PGVECTOR_URL as string;
      const { schema, engine, sql } = await setUp(url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(10, 50, 5).map((content) => ({ content })));
      const { id } = await a.remember({ content: 'bird' });
      // A reader whose pool runs `between` right after each refresh of its cache: a copy of
      // 'bird' is written and committed, then 'bird' itself deleted. Any one snapshot holds one
      // of them; a search that took new records from the refresh's snapshot and deletions from
      // a later one would return neither.
      let between: (() => Promise<void>) | null = null;
      const pool = new pg.Pool({ connectionString: url, max: 3 });
      const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
      Object.assign(pool, {
        query: async (...args: unknown[]) => {
          const result = await query(...args);
          const text = typeof args[0] === 'string' ? args[0] : '';
          const step = between;
          if (step !== null && text.includes('pg_snapshot_xmax') && text.includes('LATERAL')) {
            between = null;
            await step();
          }
          return result;
        },
      });
      const memory = createPostgresStore({
        pool,
        schema,
        vectorDimensions: DIMENSIONS,
        preloadSearchIndex: true,
      });
      cleanup.push(async () => {
        await memory.close();
        await pool.end();
      });
      await memory.init();
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      await same(memory, sql, visibility(), 5, ['bird']);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      cleanup.push(() => client.end());
      between = async () => {
        await client.query(copyRecord(schema, 'copy-of-bird', 'this'), [id]);
        await client.query(`DELETE FROM "${schema}".mnemo_records WHERE id = $1`, [id]);
      };
      const [hits] = await same(memory, sql, visibility(), 5, ['bird']);
      expect(between).toBeNull();
      expect(hits?.[0]?.slice(0, 2)).toEqual(['bird', 'copy-of-bird']);
    },
  );

  it.skipIf(PGVECTOR_URL === undefined)(
    'finds a record whose transaction was still running at its last refresh',
    async () => {
      const url = PGVECTOR_URL as string;
      const { schema, engine, memory, sql } = await setUp(url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(5, 100, 5).map((content) => ({ content })));
      const { id } = await a.remember({ content: 'bird' });
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      await same(memory, sql, visibility());

      // A copy of the record, written by a transaction left open across a refresh, while a
      // later transaction commits (so the open one's id is below the reader's snapshot's xmax).
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      cleanup.push(() => client.end());
      await client.query('BEGIN');
      await client.query(copyRecord(schema, 'copy-of-bird', 'this'), [id]);
      await a.remember({ content: 'fish' });
      const running = await same(memory, sql, visibility());
      expect(running[3]?.map(([recordId]) => recordId)).not.toContain('copy-of-bird');
      await client.query('COMMIT');
      const committed = await same(memory, sql, visibility());
      expect(committed[3]?.slice(0, 2).map(([, recordId]) => recordId)).toEqual([
        id,
        'copy-of-bird',
      ]);
    },
  );

  it.skipIf(bin === null)(
    'loads the codes again after a server restart, which may have taken the server back in time',
    async () => {
      const server = await startDedicatedServer(bin as string);
      cleanup.push(() => server.destroy());
      const { engine, memory, sql } = await setUp(server.url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(13, 30, 5).map((content) => ({ content })));
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      await same(memory, sql, visibility());
      // A copy of the data folder, then transactions the cache's position moves past.
      await server.stop('fast');
      await run('cp', ['-a', server.data, `${server.data}.copy`]);
      await server.start();
      await afterRestart(() => a.rememberMany(texts(14, 20, 5).map((content) => ({ content }))));
      await afterRestart(() => same(memory, sql, visibility()));
      // Restored from the copy: the next transactions take ids the position is already past.
      await server.stop('fast');
      await run('rm', ['-rf', server.data]);
      await run('mv', [`${server.data}.copy`, server.data]);
      await server.start();
      const { id } = await afterRestart(() => a.remember({ content: 'bird' }));
      const [birds] = await afterRestart(() => same(memory, sql, visibility(), 5, ['bird']));
      expect(birds?.[0]).toEqual(['bird', id, 1]);
    },
    120_000,
  );

  it.skipIf(bin === null)(
    'loads the codes again after a backend crash, after which transaction ids are handed out again',
    async () => {
      const server = await startDedicatedServer(bin as string);
      cleanup.push(() => server.destroy());
      const { engine, memory, sql } = await setUp(server.url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(15, 30, 5).map((content) => ({ content })));
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      // A transaction takes an id and rolls back; a search moves the cache's position past it.
      const victim = new pg.Client({ connectionString: server.url });
      victim.on('error', () => undefined);
      await victim.connect();
      const pid = Number((await victim.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await victim.query('BEGIN');
      await victim.query('SELECT pg_current_xact_id()');
      await victim.query('ROLLBACK');
      await same(memory, sql, visibility());
      // A backend crashes: the server resets (the same postmaster) and replays its log, in
      // which that id was never written, so the next transaction takes it again.
      process.kill(pid, 'SIGKILL');
      const { id } = await afterRestart(() => a.remember({ content: 'bird' }));
      const [birds] = await afterRestart(() => same(memory, sql, visibility(), 5, ['bird']));
      expect(birds?.[0]).toEqual(['bird', id, 1]);
    },
    120_000,
  );

  it.skipIf(PGVECTOR_URL === undefined || bin === null)(
    'loads the codes again after the schema is restored into the running server',
    async () => {
      const url = PGVECTOR_URL as string;
      const { schema, engine, memory, sql } = await setUp(url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(16, 30, 5).map((content) => ({ content })));
      const { id } = await a.remember({ content: 'bird' });
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      const folder = mkdtempSync('/tmp/mnemo-dump-');
      cleanup.push(async () => rmSync(folder, { recursive: true, force: true }));
      const dump = join(folder, 'dump');
      await run(join(bin as string, 'pg_dump'), ['-Fc', '-n', schema, '-f', dump, url]);
      // Forgotten; a search for the best one finds it gone, so the codes drop it.
      await a.forget({ ids: [id] });
      const [gone] = await same(memory, sql, visibility(), 1, ['bird']);
      expect(gone?.[0]?.[1]).not.toBe(id);
      // The backup restored over the schema: tables made anew, the data loaded before the
      // triggers are.
      await run(join(bin as string, 'pg_restore'), ['--clean', '-d', url, dump]);
      const [birds] = await afterRestart(() => same(memory, sql, visibility(), 5, ['bird']));
      expect(birds?.[0]).toEqual(['bird', id, 1]);
    },
  );
});
