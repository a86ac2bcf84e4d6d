import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  createEngine,
  type LexicalQuery,
  type MemoryStore,
  queryTerms,
  type RecordFilters,
  type ScoredRecord,
  type Visibility,
} from '@mnemo/core';
import { bm25Reference } from '@mnemo/core/testing';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { afterRestart, QUESTIONS, texts, WORDS } from './cache-fixture.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';
import { postgresBinDir, startDedicatedServer } from './dedicated-server.js';

// A lexical search without filters, or with memory type and scope filters only, scores the
// records it holds in the process with the caller's statistics (`lexicalIndex: 'memory'`, the
// default) while other processes write: here other stores on the same schema, and raw
// transactions. Every answer must equal the SQL search's (`lexicalIndex: 'sql'`).

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * A store on `schema` searching lexically from `lexicalIndex`, with the statements its pool
 * ran (`sent`): the SQL search's own statements among them mean the memory search fell back.
 */
function store(
  schema: string,
  lexicalIndex: 'memory' | 'sql',
  url = PG_URL as string,
  preloadSearchIndex = lexicalIndex === 'memory',
) {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => undefined);
  const sent: string[] = [];
  /** Runs before each statement that scores the cache's candidates is sent, when set. */
  const hooks: { beforeScoring: (() => Promise<unknown>) | null } = { beforeScoring: null };
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  Object.assign(pool, {
    query: (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      const text = typeof config === 'string' ? config : config.text;
      sent.push(text);
      const hook = hooks.beforeScoring;
      return text.includes(SCORING) && hook !== null
        ? hook().then(() => query(...args))
        : query(...args);
    },
  });
  const opened = createPostgresStore({
    pool,
    schema,
    lexicalIndex,
    vector: 'array',
    preloadSearchIndex,
  });
  cleanup.push(async () => {
    await opened.close();
    await pool.end();
  });
  return { store: opened, sent, hooks };
}

/** A phrase of the statement that scores the cache's candidates (`scoreLexicalCandidates`). */
const SCORING = "the records written since the cache's snapshot, as one array";

/** How many SQL lexical searches (pruned, or over the postings) a pool ran. */
const sqlSearches = (sent: readonly string[]) =>
  sent.filter((text) => text.includes('seeds AS MATERIALIZED') || text.includes('scored AS ('))
    .length;

/** A writer engine and two readers on one new schema: one from memory, one searching in SQL. */
async function setUp(url = PG_URL as string) {
  const schema = uniqueSchema('lexical_cache');
  cleanup.push(() => dropSchema(schema, url));
  const writer = createPostgresStore({
    connectionString: url,
    schema,
    vector: 'array',
  });
  cleanup.push(() => writer.close());
  const engine = createEngine({ store: writer, readAuditing: false });
  await engine.init();
  const memory = store(schema, 'memory', url);
  const sql = store(schema, 'sql', url);
  await memory.store.init();
  await sql.store.init();
  return {
    schema,
    engine,
    memory: memory.store,
    sent: memory.sent,
    hooks: memory.hooks,
    sql: sql.store,
  };
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
    const query: LexicalQuery = { visibility, filters, terms: queryTerms(question), limit };
    const fromMemory = answer(await memory.searchLexical(query));
    expect(fromMemory).toEqual(answer(await sql.searchLexical(query)));
    answers.push(fromMemory);
  }
  return answers;
}

/**
 * Statements copying record `$1`, its postings and its share of the statistics, under the id
 * `copyId`, as a restore or an import written by hand would.
 */
function copyStatements(schema: string, copyId: string): string[] {
  const s = `"${schema}"`;
  return [
    `INSERT INTO ${s}.mnemo_records SELECT (jsonb_populate_record(NULL::${s}.mnemo_records,
       to_jsonb(r) || jsonb_build_object('id', '${copyId}', 'written_xid', NULL))).*
     FROM ${s}.mnemo_records r WHERE id = $1`,
    `INSERT INTO ${s}.mnemo_postings (record_id, term, tf, agent_id, org_key, scope, memory_type, expires_at, doc_length)
     SELECT '${copyId}', term, tf, agent_id, org_key, scope, memory_type, expires_at, doc_length
     FROM ${s}.mnemo_postings WHERE record_id = $1`,
    `UPDATE ${s}.mnemo_term_stats ts SET df = ts.df + 1 FROM ${s}.mnemo_postings po
     WHERE po.record_id = $1 AND po.expires_at IS NULL AND ts.term = po.term AND ts.agent_id = po.agent_id
       AND ts.org_key = po.org_key AND ts.scope = po.scope AND ts.memory_type = po.memory_type`,
    `UPDATE ${s}.mnemo_lexical_stats st SET records = st.records + 1, total_length = st.total_length + r.doc_length
     FROM ${s}.mnemo_records r
     WHERE r.id = $1 AND r.expires_at IS NULL AND st.agent_id = r.agent_id AND st.org_key = coalesce(r.org_id, '')
       AND st.scope = r.scope AND st.memory_type = r.memory_type`,
  ];
}

const run = promisify(execFile);
const bin = postgresBinDir();

describePostgres('lexical search from memory', () => {
  it('scores exactly as BM25 over the visible records, from memory', async () => {
    const { engine, memory, sent, sql } = await setUp();
    const contents = [...QUESTIONS, ...texts(1, 120, 7)];
    const written = await engine
      .as('agent-a')
      .rememberMany(contents.map((content) => ({ content })));
    // Repeated texts are one record (deduplicated).
    const documents = [
      ...new Map(written.map((result, i) => [result.id, contents[i] as string])),
    ].map(([id, content]) => ({ id, content }));
    expect(documents.length).toBeGreaterThan(100);
    const visibility = { agentId: 'agent-a', orgId: null, now: new Date() };
    const answers = await same(memory, sql, visibility, 5);
    answers.forEach((hits, i) => {
      const expected = bm25Reference(documents, QUESTIONS[i] as string).slice(0, 5);
      expect(hits.map(([, id, score]) => [id, score])).toEqual(
        expected.map((hit) => [hit.id, hit.score]),
      );
    });
    expect(sqlSearches(sent)).toBe(0);
  });

  it('answers as SQL while other stores write and forget, and records expire', async () => {
    const { engine, memory, sent, sql } = await setUp();
    const a = engine.as('agent-a');
    const now = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
    await a.rememberMany(texts(2, 150, 7).map((content) => ({ content })));
    await engine
      .as('agent-b')
      .rememberMany(texts(3, 50, 7).map((content) => ({ content, scope: 'global' as const })));
    await same(memory, sql, now());

    // Written after the reader loaded, and the best matches: each question twice over.
    const added = await a.rememberMany(
      QUESTIONS.map((content) => ({ content: `${content} ${content}` })),
    );
    const answers = await same(memory, sql, now());
    expect(answers.map((hits) => hits[0]?.[1])).toEqual(added.map((result) => result.id));

    // Forgotten in each mode: gone from the answers.
    const [soft, hard, redacted] = added.map((result) => result.id);
    await a.forget({ ids: [soft as string] });
    await a.forget({ ids: [hard as string], mode: 'hard' });
    await a.forget({ ids: [redacted as string], mode: 'redact' });
    const after = await same(memory, sql, now());
    for (const hits of after) {
      for (const [, id] of hits) expect([soft, hard, redacted]).not.toContain(id);
    }
    expect(after.slice(3).map((hits) => hits[0]?.[1])).toEqual(
      added.slice(3).map((result) => result.id),
    );

    // Expiring records: in the answers until they expire.
    const soon = new Date(Date.now() + 60_000);
    await a.remember({ content: 'dog park dog park dog', expiresAt: soon });
    const before = await same(memory, sql, now());
    expect(before[0]?.[0]?.[0]).toBe('dog park dog park dog');
    const expired = await same(memory, sql, { ...now(), now: new Date(soon.getTime() + 1) });
    expect(expired[0]?.map(([content]) => content)).not.toContain('dog park dog park dog');
    expect(sqlSearches(sent)).toBe(0);
  });

  it('keeps an answer whose statistics a write changed after they were read, when its candidates still hold the top', async () => {
    const { engine, memory, sent, hooks, sql } = await setUp();
    const a = engine.as('agent-a');
    await a.rememberMany(texts(4, 150, 7).map((content) => ({ content })));
    const now = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
    await same(memory, sql, now());
    const scorings = () => sent.filter((text) => text.includes(SCORING)).length;
    const before = scorings();
    // Between the statistics and the statement scoring the candidates, a record the caller
    // sees is written: N and the average length that statement computes differ.
    let written = 0;
    hooks.beforeScoring = async () => {
      written += 1;
      await a.remember({ content: `note ${written} about nothing asked` });
    };
    const answers = await same(memory, sql, now());
    hooks.beforeScoring = null;
    expect(written).toBe(QUESTIONS.length);
    expect(answers.every((hits) => hits.length === 5)).toBe(true);
    // One scoring statement per question, and no search in SQL.
    expect(scorings() - before).toBe(QUESTIONS.length);
    expect(sqlSearches(sent)).toBe(0);
  });

  it('answers callers who see few of the records, shared ones included', async () => {
    const { engine, memory, sql } = await setUp();
    // agent-a's private records are most of the store, and the best matches.
    await engine
      .as('agent-a')
      .rememberMany([...QUESTIONS, ...texts(4, 200, 7)].map((content) => ({ content })));
    const c = engine.as('agent-c', { orgId: 'acme' });
    await c.rememberMany(texts(5, 8, 7).map((content) => ({ content })));
    const d = engine.as('agent-d', { orgId: 'acme' });
    const shared = await d.remember({ content: 'dog park bird', scope: 'shared' });
    await d.share({ recordId: shared.id, with: ['agent-c'] });
    await d.remember({ content: 'dog park cat', scope: 'shared' });
    // Shared records not shared with agent-c: in memory's superset (grants are SQL's to
    // check), and the best matches, so they alone cannot prove a top.
    await d.rememberMany(
      QUESTIONS.flatMap((content) => [content, content]).map((content) => ({
        content,
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
  });

  it('proves its top when most of the best-scored records are hidden from the caller or deleted', async () => {
    const { engine, memory, sent, sql } = await setUp();
    const c = engine.as('agent-c', { orgId: 'acme' });
    const d = engine.as('agent-d', { orgId: 'acme' });
    await c.rememberMany(
      texts(11, 100, 7)
        .filter((text) => !/bird|fish/.test(text))
        .map((content) => ({ content })),
    );
    // agent-d's shared records score best for 'bird', and agent-c sees none of them; agent-c's
    // own best is among them, its next ones far below.
    await d.rememberMany(
      Array.from({ length: 12 }, (_, i) => ({
        content: `bird bird bird ${WORDS[i]}`,
        scope: 'shared' as const,
      })),
    );
    const own = await c.rememberMany([
      { content: 'bird bird bird' },
      { content: 'bird lake river hill road' },
      { content: 'bird lake river hill road house' },
      { content: 'bird lake river hill road house tree' },
    ]);
    const visibility = () => ({ agentId: 'agent-c', orgId: 'acme', now: new Date() });
    const [hidden] = await same(memory, sql, visibility(), 3, ['bird']);
    expect(hidden?.map(([, id]) => id)).toEqual(own.slice(0, 3).map((result) => result.id));

    // The best records of agent-c for 'fish', forgotten by another store after the reader
    // loaded them: candidates until found missing.
    const fishes = await c.rememberMany(
      Array.from({ length: 12 }, (_, i) => ({ content: `fish fish fish ${WORDS[i]}` })),
    );
    const kept = await c.rememberMany([
      { content: 'fish lake river' },
      { content: 'fish lake river hill' },
      { content: 'fish lake river hill road' },
    ]);
    await same(memory, sql, visibility(), 3, ['fish']);
    await c.forget({ ids: fishes.slice(1).map((result) => result.id) });
    const [deleted] = await same(memory, sql, visibility(), 3, ['fish']);
    expect(deleted?.map(([, id]) => id)).toEqual([
      fishes[0]?.id,
      ...kept.slice(0, 2).map((result) => result.id),
    ]);
    expect(sqlSearches(sent)).toBe(0);
  });

  it('answers filtered searches as SQL, and tag and thread filters in SQL', async () => {
    const { engine, memory, sql } = await setUp();
    const types = ['episodic', 'semantic', 'procedural'] as const;
    const scopes = ['private', 'shared', 'public', 'global'] as const;
    await engine.as('agent-a', { orgId: 'acme' }).rememberMany(
      [...QUESTIONS, ...texts(6, 300, 7)].map((content, i) => ({
        content,
        memoryType: types[i % 3],
        scope: scopes[i % 4],
        tags: i % 5 === 0 ? ['five'] : [],
      })),
    );
    const visibility = { agentId: 'agent-a', orgId: 'acme', now: new Date() };
    for (const filters of [
      { memoryTypes: ['procedural' as const] },
      { scopes: ['global' as const, 'shared' as const] },
      { memoryTypes: ['semantic' as const], scopes: ['public' as const] },
      { memoryTypes: ['episodic' as const, 'semantic' as const], scopes: ['private' as const] },
      { tagsAny: ['five'] },
      { threadId: 'none' },
    ]) {
      await same(memory, sql, visibility, 5, QUESTIONS, filters);
    }
    // Another agent of the org sees only the records it may, filtered the same way.
    await same(memory, sql, { ...visibility, agentId: 'agent-b' }, 5, QUESTIONS, {
      scopes: ['public', 'private'],
    });
  });

  it('breaks ties at the cut as SQL does: by id, byte-wise', async () => {
    const { engine, memory, sent, sql } = await setUp();
    const a = engine.as('agent-a');
    await a.rememberMany(texts(7, 100, 7).map((content) => ({ content })));
    // Forty records of equal score for 'bird', their ids in no particular order.
    const same40 = await a.rememberMany(
      Array.from({ length: 40 }, (_, i) => ({ content: `bird ${['x', 'y', 'z', 'w'][i % 4]}` })),
    );
    const visibility = { agentId: 'agent-a', orgId: null, now: new Date() };
    const [hits] = await same(memory, sql, visibility, 5, ['bird zebra']);
    const ranked = hits?.map(([, id]) => id as string) ?? [];
    const ties = same40.map((r) => r.id).filter((id) => ranked.includes(id));
    expect(ties).toEqual([...ties].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
    expect(sqlSearches(sent)).toBe(0);
  });

  it('follows raw transactions: copies with their postings, grants, and a transaction left open', async () => {
    const { schema, engine, memory, sql } = await setUp();
    const d = engine.as('agent-d', { orgId: 'acme' });
    await d.rememberMany(texts(8, 100, 7).map((content) => ({ content })));
    const { id } = await d.remember({ content: 'bird bird lake', scope: 'shared' });
    const visibility = () => ({ agentId: 'agent-d', orgId: 'acme', now: new Date() });
    const other = () => ({ agentId: 'agent-c', orgId: 'acme', now: new Date() });
    await same(memory, sql, visibility());
    await same(memory, sql, other());

    const client = new pg.Client({ connectionString: PG_URL as string });
    await client.connect();
    cleanup.push(() => client.end());
    // A copy written by a transaction left open across a search, while another commits.
    await client.query('BEGIN');
    for (const statement of copyStatements(schema, 'copy-of-bird'))
      await client.query(statement, [id]);
    await d.remember({ content: 'fish' });
    const running = await same(memory, sql, visibility());
    expect(running[3]?.map(([, recordId]) => recordId)).not.toContain('copy-of-bird');
    await client.query('COMMIT');
    const committed = await same(memory, sql, visibility());
    expect(committed[3]?.slice(0, 2).map(([, recordId]) => recordId)).toEqual(
      [id, 'copy-of-bird'].sort(),
    );
    // Shared with agent-c by a grant written by hand, then revoked.
    expect((await same(memory, sql, other()))[3]).toEqual([]);
    await client.query(
      `INSERT INTO "${schema}".mnemo_grants (record_id, grantee_agent_id, grantee_org_id, level, granted_by, created_at)
       VALUES ($1, 'agent-c', 'acme', 1, 'agent-d', 0)`,
      ['copy-of-bird'],
    );
    expect((await same(memory, sql, other()))[3]?.map(([, recordId]) => recordId)).toEqual([
      'copy-of-bird',
    ]);
    await client.query(`DELETE FROM "${schema}".mnemo_grants`);
    expect((await same(memory, sql, other()))[3]).toEqual([]);
  });

  it('drops records deleted by other stores once found missing, and answers many of them', async () => {
    const { engine, memory, sent, sql } = await setUp();
    const a = engine.as('agent-a');
    const written = await a.rememberMany(
      [...QUESTIONS, ...QUESTIONS.map((q) => `${q} ${q}`), ...texts(9, 200, 7)].map((content) => ({
        content,
      })),
    );
    const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
    await same(memory, sql, visibility());
    // The best matches deleted, by another store, in every mode.
    const ids = written.slice(0, 2 * QUESTIONS.length).map((result) => result.id);
    await a.forget({ ids: ids.slice(0, 4) });
    await a.forget({ ids: ids.slice(4, 7), mode: 'hard' });
    await a.forget({ ids: ids.slice(7), mode: 'redact' });
    const after = await same(memory, sql, visibility());
    for (const hits of after) for (const [, id] of hits) expect(ids).not.toContain(id);
    await same(memory, sql, visibility(), 20);
    expect(sqlSearches(sent)).toBe(0);
  });

  it('lets a search running when close() is called finish, the postings loading or loaded', async () => {
    const { schema, engine, sql } = await setUp();
    await engine.as('agent-a').rememberMany(texts(10, 40, 7).map((content) => ({ content })));
    const query: LexicalQuery = {
      visibility: { agentId: 'agent-a', orgId: null, now: new Date() },
      filters: {},
      terms: queryTerms('dog park'),
      limit: 5,
    };
    const expected = answer(await sql.searchLexical(query));
    expect(expected).toHaveLength(5);
    // Not preloaded, the search starts the load and answers in SQL, and close() stops the load;
    // preloaded, it refreshes the postings and scores candidates.
    for (const preloaded of [false, true]) {
      const { store: memory } = store(schema, 'memory', PG_URL as string, preloaded);
      await memory.init();
      const search = memory.searchLexical(query);
      await memory.close();
      expect(answer(await search)).toEqual(expected);
      await expect(memory.searchLexical(query)).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    }
  });

  it.skipIf(bin === null)(
    'loads the postings again after a server restart, which may have taken the server back in time',
    async () => {
      const server = await startDedicatedServer(bin as string);
      cleanup.push(() => server.destroy());
      const { engine, memory, sql } = await setUp(server.url);
      const a = engine.as('agent-a');
      await a.rememberMany(texts(13, 30, 7).map((content) => ({ content })));
      const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
      await same(memory, sql, visibility());
      // A copy of the data folder, then transactions the cache's position moves past.
      await server.stop('fast');
      await run('cp', ['-a', server.data, `${server.data}.copy`]);
      await server.start();
      // Each its own transaction, so that the position moves well past the ids the copy hands
      // out again.
      for (const content of texts(14, 10, 7)) await afterRestart(() => a.remember({ content }));
      await afterRestart(() => same(memory, sql, visibility()));
      // Restored from the copy: the next transactions take ids the position is already past.
      await server.stop('fast');
      await run('rm', ['-rf', server.data]);
      await run('mv', [`${server.data}.copy`, server.data]);
      await server.start();
      const { id } = await afterRestart(() => a.remember({ content: 'bird bird bird' }));
      const [birds] = await afterRestart(() => same(memory, sql, visibility(), 5, ['bird']));
      expect(birds?.[0]?.[1]).toBe(id);
    },
    120_000,
  );
});
