import { type MemoryStore, queryTerms, type ScoredRecord } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { QUESTIONS, texts, writerOnNewSchema } from './cache-fixture.js';
import { describePostgres, PG_URL } from './database.js';

// When the in-process caches load (see `FollowedCache`): in the background from the first
// search that would use them, searches answering in SQL meanwhile; in `init()` with
// `preloadSearchIndex`.

const DIMENSIONS = 64;
const embedder = createHashEmbedder({ dimensions: DIMENSIONS });

/** Phrases of a cache load's page (`loadVectorCache`, `loadLexicalCache`). */
const LOAD_PAGE = 'ORDER BY r.id LIMIT';
/** Phrases of the SQL searches: lexical (pruned, or over the postings), and vector. */
const LEXICAL_IN_SQL = ['seeds AS MATERIALIZED', 'scored AS ('];
const VECTOR_IN_SQL = ['ORDER BY score DESC NULLS LAST'];

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * A store on `schema` (searching from memory unless `index` says otherwise) and `count`, of the
 * statements its pool ran with any of some phrases; `hold()` makes each load page wait, and
 * `fail(error)` fails them, until `release()` (which the cleanup calls too); `loaded()` waits
 * until the pages sent so far have answered and their loads are done.
 */
function following(schema: string, index: 'memory' | 'sql' = 'memory', preloadSearchIndex = false) {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  pool.on('error', () => undefined);
  const sent: string[] = [];
  const pages: Promise<unknown>[] = [];
  let gate: Promise<void> | null = null;
  let release: () => void = () => undefined;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  Object.assign(pool, {
    query: (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      const text = typeof config === 'string' ? config : config.text;
      sent.push(text);
      if (!text.includes(LOAD_PAGE)) return query(...args);
      const page = gate === null ? query(...args) : gate.then(() => query(...args));
      pages.push(page.catch(() => undefined));
      return page;
    },
  });
  const store = createPostgresStore({
    pool,
    schema,
    vector: 'array',
    vectorIndex: index,
    lexicalIndex: index,
    preloadSearchIndex,
  });
  cleanup.push(async () => {
    release();
    await store.close();
    await pool.end();
  });
  return {
    store,
    count: (phrases: readonly string[]) =>
      sent.filter((text) => phrases.some((phrase) => text.includes(phrase))).length,
    hold: () => {
      gate = new Promise<void>((resolve) => {
        release = () => {
          gate = null;
          resolve();
        };
      });
    },
    release: () => release(),
    fail: (error: Error) => {
      gate = Promise.reject(error);
      gate.catch(() => undefined);
      release = () => {
        gate = null;
      };
    },
    loaded: async () => {
      await Promise.all(pages);
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

const answer = (hits: readonly ScoredRecord[]) =>
  hits.map((hit) => [hit.record.content, hit.record.id, hit.score]);

/**
 * A schema holding `records` texts of agent-a's, with what a store searching in SQL answers
 * to `ask`, and how many statements of each SQL search it sent for it.
 */
async function setUp(records: number) {
  const { schema, engine } = await writerOnNewSchema('cache_loading', cleanup, embedder);
  await engine
    .as('agent-a')
    .rememberMany(texts(31, records, 6).map((text, n) => ({ content: `${text} ${n}` })));
  const sql = following(schema, 'sql');
  await sql.store.init();
  const expected = await ask(sql.store);
  return {
    schema,
    expected,
    lexicalInSql: sql.count(LEXICAL_IN_SQL),
    vectorInSql: sql.count(VECTOR_IN_SQL),
  };
}

/** Every question of `QUESTIONS`, lexical and vector, as agent-a: the answers. */
async function ask(store: MemoryStore) {
  const answers = [];
  for (const question of QUESTIONS) {
    const [vector] = await embedder.embed([question]);
    const asked = {
      visibility: { agentId: 'agent-a', orgId: null, now: new Date() },
      filters: {},
      limit: 5,
    };
    answers.push(answer(await store.searchLexical({ ...asked, terms: queryTerms(question) })));
    answers.push(answer(await store.searchVector({ ...asked, vector: vector as Float32Array })));
  }
  return answers;
}

describePostgres('loading the caches', () => {
  it('answers in SQL while the caches load from the first search, then from memory', async () => {
    const { schema, expected, lexicalInSql, vectorInSql } = await setUp(300);
    const memory = following(schema);
    await memory.store.init();
    expect(memory.count([LOAD_PAGE])).toBe(0);
    memory.hold();
    // The loads wait: every search answers in SQL, as the SQL store does, the first having
    // started them.
    expect(await ask(memory.store)).toEqual(expected);
    expect(await ask(memory.store)).toEqual(expected);
    expect(memory.count(LEXICAL_IN_SQL)).toBe(2 * lexicalInSql);
    expect(memory.count(VECTOR_IN_SQL)).toBe(2 * vectorInSql);
    expect(memory.count([LOAD_PAGE])).toBe(2);
    memory.release();
    await memory.loaded();
    expect(await ask(memory.store)).toEqual(expected);
    expect(memory.count(LEXICAL_IN_SQL)).toBe(2 * lexicalInSql);
    expect(memory.count(VECTOR_IN_SQL)).toBe(2 * vectorInSql);
    expect(memory.count([LOAD_PAGE])).toBe(2);
  });

  it('answers in SQL while loads fail, and loads again at a later search', async () => {
    const { schema, expected, lexicalInSql, vectorInSql } = await setUp(50);
    const memory = following(schema);
    await memory.store.init();
    memory.fail(Object.assign(new Error('terminating connection'), { code: '57P01' }));
    expect(await ask(memory.store)).toEqual(expected);
    memory.hold();
    expect(await ask(memory.store)).toEqual(expected);
    expect(memory.count(LEXICAL_IN_SQL)).toBe(2 * lexicalInSql);
    expect(memory.count(VECTOR_IN_SQL)).toBe(2 * vectorInSql);
    memory.release();
    await memory.loaded();
    expect(await ask(memory.store)).toEqual(expected);
    expect(memory.count(LEXICAL_IN_SQL)).toBe(2 * lexicalInSql);
    expect(memory.count(VECTOR_IN_SQL)).toBe(2 * vectorInSql);
  });

  it('loads in init() with preloadSearchIndex, which fails init() when a load fails', async () => {
    const { schema, expected } = await setUp(50);
    const memory = following(schema, 'memory', true);
    memory.fail(Object.assign(new Error('terminating connection'), { code: '57P01' }));
    await expect(memory.store.init()).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      details: { sqlstate: '57P01' },
    });
    expect(memory.count([LOAD_PAGE])).toBe(2);
    memory.release();
    await memory.store.init();
    expect(memory.count([LOAD_PAGE])).toBe(4);
    expect(await ask(memory.store)).toEqual(expected);
    expect(memory.count([...LEXICAL_IN_SQL, ...VECTOR_IN_SQL])).toBe(0);
    // Searching in SQL, a store has no cache to load.
    const sql = following(schema, 'sql', true);
    await sql.store.init();
    expect(sql.count([LOAD_PAGE])).toBe(0);
  });

  it('stops a load at its next page when the store closes, so a short-lived process does not wait for it', async () => {
    const { schema, expected } = await setUp(10_001);
    const memory = following(schema);
    await memory.store.init();
    memory.hold();
    expect(await ask(memory.store)).toEqual(expected);
    const closed = memory.store.close();
    memory.release();
    await closed;
    // One page of 10,000 records each, of the 10,001: the second was never asked for.
    expect(memory.count([LOAD_PAGE])).toBe(2);
  }, 60_000);
});
