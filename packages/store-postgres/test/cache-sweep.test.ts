import { type MemoryStore, queryTerms, type ScoredRecord } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { LexicalCache, type LexicalRecord } from '../src/lexical-cache.js';
import { texts, writerOnNewSchema } from './cache-fixture.js';
import { describePostgres, PG_URL } from './database.js';

// What the sweep of a cache (see `CachedRecords.sweep`) asks the table about, in the process: the
// records that no search ranks would otherwise stay held after being deleted or purged.

const POSITION = { from: '1', pending: [], run: 'run' };

const record = (id: string): LexicalRecord => ({
  id,
  agentId: 'agent-a',
  orgId: null,
  scope: 'private',
  expiresAt: null,
  memoryType: 'semantic',
  docLength: 1,
  terms: ['word'],
  tfs: [1],
});

const ids = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, n) => `${prefix}${String(n).padStart(5, '0')}`);

/** Adds `added` to `cache` as a refresh does, the position moved once they are. */
function refresh(cache: LexicalCache, added: readonly string[]): void {
  for (const id of added) cache.add(record(id));
  cache.position = POSITION;
}

/** A cache loaded with `loaded` records, then refreshed with `added` more. */
function cacheWith(loaded: readonly string[], added: readonly string[]): LexicalCache {
  const cache = new LexicalCache();
  refresh(cache, loaded);
  refresh(cache, added);
  return cache;
}

describe('the sweep of a cache', () => {
  it('waits for a thousand records taken in after the first load, then checks twice as many', () => {
    const loaded = ids('l', 3_000);
    const cache = cacheWith(loaded, ids('a', 999));
    expect(cache.sweep()).toBeNull();
    refresh(cache, ['a00999']);
    expect(cache.sweep()).toEqual({ ids: loaded.slice(0, 2_000), version: 3 });
    expect(cache.sweep()).toBeNull();
  });

  it('checks each record once at most, and then waits for a thousand more', () => {
    const loaded = ids('l', 100);
    const cache = cacheWith(loaded, ids('a', 1_500));
    expect(cache.sweep()?.ids).toEqual([...loaded, ...ids('a', 1_500)]);
    refresh(cache, ids('b', 999));
    expect(cache.sweep()).toBeNull();
  });

  it('goes on from where it stopped, round the slots, skipping those dropped, never one twice', () => {
    const loaded = ids('l', 1_500);
    const cache = cacheWith(loaded, ids('a', 1_000));
    expect(cache.sweep()?.ids).toEqual(loaded.slice(0, 2_000).concat(ids('a', 500)));
    cache.drop(['a00600', 'l00001'], cache.version);
    refresh(cache, ids('b', 1_000));
    const all = [...loaded, ...ids('a', 1_000), ...ids('b', 1_000)].filter(
      (id) => id !== 'a00600' && id !== 'l00001',
    );
    expect(cache.sweep()?.ids).toEqual(all.slice(1_999).concat(all.slice(0, 501)));
  });

  it('counts records read again under an id it holds as nothing taken in', () => {
    const loaded = ids('l', 1_000);
    const cache = cacheWith(loaded, loaded);
    expect(cache.sweep()).toBeNull();
  });

  it('checks at most twenty thousand at once, and takes the rest at the next refresh', () => {
    const loaded = ids('l', 30_000);
    const cache = cacheWith(loaded, ids('a', 15_000));
    expect(cache.sweep()?.ids).toEqual(loaded.slice(0, 20_000));
    expect(cache.sweep()?.ids).toEqual(loaded.slice(20_000, 30_000));
    expect(cache.sweep()).toBeNull();
  });

  it('keeps its place on the same record when dropped records are compacted away', () => {
    const loaded = ids('l', 4_000);
    const cache = cacheWith(loaded, ids('a', 1_000));
    expect(cache.sweep()?.ids).toEqual(loaded.slice(0, 2_000));
    // More dead than live and over 1,024: the slots are renumbered from 0.
    cache.drop(loaded.slice(0, 1_500).concat(loaded.slice(2_500)), cache.version);
    refresh(cache, ids('b', 1_000));
    expect(cache.sweep()?.ids).toEqual(
      loaded.slice(2_000, 2_500).concat(ids('a', 1_000), ids('b', 500)),
    );
  });
});

const answer = (hits: readonly ScoredRecord[]) =>
  hits.map((hit) => [hit.record.content, hit.record.id, hit.score]);

/**
 * What a lexical cache holds of its terms (white-box: the memory a compaction gives back): per
 * term, its list's length and bounds (largest tf, least length), and how many lists it keeps.
 */
const heldTerms = (cache: LexicalCache) => {
  const held = cache as unknown as {
    termIds: Map<string, number>;
    postings: ({ slots: number[]; maxTf: number; minLength: number } | undefined)[];
  };
  const list = (id: number) => {
    const found = held.postings[id];
    return found && [found.slots.length, found.maxTf, found.minLength];
  };
  return {
    terms: new Map([...held.termIds].map(([name, id]) => [name, list(id)])),
    lists: held.postings.length,
  };
};

describe('the compaction of a lexical cache', () => {
  const records = (count: number, from = 0) =>
    Array.from({ length: count }, (_, n): LexicalRecord => {
      const k = from + n;
      return {
        ...record(`r${String(k).padStart(5, '0')}`),
        docLength: 2 + (k % 3) + (k < 2_000 ? 5 : 0),
        terms: ['common', `only${k}`, ...(k % 2 === 0 ? ['even'] : [])],
        tfs: [1 + (k % 4) + (k < 2_000 ? 3 : 0), 1, ...(k % 2 === 0 ? [2] : [])],
      };
    });
  const visibility = { agentId: 'agent-a', orgId: null, now: new Date() };
  const stats = (terms: string[], dfs: number[]) => ({ n: 1_000, avgdl: 3, terms, dfs });
  const questions = [
    stats(['common', 'even', 'only2999'], [1_000, 500, 1]),
    stats(['common'], [1_000]),
    stats(['even', 'only10', 'only2500'], [500, 0, 1]),
  ];

  it('lets go of the terms only dropped records held, and answers as a cache of the rest', () => {
    const cache = new LexicalCache();
    for (const held of records(3_000)) cache.add(held);
    cache.position = POSITION;
    // Every record but the last 1,000 dropped: more dead than live, so the slots are compacted.
    cache.drop(
      records(2_000).map((held) => held.id),
      cache.version,
    );
    const rest = new LexicalCache();
    for (const held of records(1_000, 2_000)) rest.add(held);
    rest.position = POSITION;
    const { terms, lists } = heldTerms(cache);
    expect(terms).toEqual(heldTerms(rest).terms);
    expect(lists).toBe(1_002);
    // The bounds are the records' held: those dropped had longer texts and higher tfs.
    expect(terms.get('common')).toEqual([1_000, 4, 2]);
    for (const question of questions) {
      expect(cache.candidates(visibility, {}, question, 5)).toEqual(
        rest.candidates(visibility, {}, question, 5),
      );
    }
    // Terms still come and go under their new ids.
    cache.add({ ...record('again'), terms: ['even', 'only10'], tfs: [3, 1] });
    expect(cache.candidates(visibility, {}, stats(['only10'], [1]), 5)?.ids).toEqual(['again']);
  });
});

/** The phrase of the statement that checks records against the table (`goneRecords`). */
const GONE = 'SELECT c.id FROM unnest';

const DIMENSIONS = 64;
const embedder = createHashEmbedder({ dimensions: DIMENSIONS });

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/**
 * A store on `schema` searching from `index` (both caches, or SQL), with the `goneRecords`
 * statements its pool ran, settled: the sweeps', and the searches' finding candidates missing.
 */
function store(schema: string, index: 'memory' | 'sql') {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
  pool.on('error', () => undefined);
  const gone: Promise<unknown>[] = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  Object.assign(pool, {
    query: (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      const result = query(...args);
      if ((typeof config === 'string' ? config : config.text).includes(GONE)) {
        gone.push(result.catch(() => undefined));
      }
      return result;
    },
  });
  const opened = createPostgresStore({
    pool,
    schema,
    vector: 'array',
    vectorIndex: index,
    lexicalIndex: index,
    preloadSearchIndex: index === 'memory',
  });
  cleanup.push(async () => {
    await opened.close();
    await pool.end();
  });
  return { store: opened, gone };
}

/** Until the `goneRecords` statements sent so far have answered and their callers are done. */
async function settled(gone: readonly Promise<unknown>[]): Promise<void> {
  await Promise.all(gone);
  await new Promise((resolve) => setImmediate(resolve));
}

describePostgres('the sweep of the caches', () => {
  it('drops records deleted by other stores that no search ranks, as new ones come in', async () => {
    const { schema, engine } = await writerOnNewSchema('cache_sweep', cleanup, embedder);
    const a = engine.as('agent-a');
    const memory = store(schema, 'memory');
    const sql = store(schema, 'sql');
    await memory.store.init();
    await sql.store.init();
    const visibility = () => ({ agentId: 'agent-a', orgId: null, now: new Date() });
    const search = async (reader: MemoryStore, question: string) => {
      const [vector] = await embedder.embed([question]);
      const asked = { visibility: visibility(), filters: {}, limit: 5 };
      return [
        answer(await reader.searchLexical({ ...asked, terms: queryTerms(question) })),
        answer(await reader.searchVector({ ...asked, vector: vector as Float32Array })),
      ];
    };
    const { id: crossing } = await a.remember({ content: 'the zebra crossing' });
    await search(memory.store, 'zebra');
    // Records that match best, taken in by the caches' refreshes: the sweep they start finds
    // none deleted.
    const zebras = await a.rememberMany(
      Array.from({ length: 1_000 }, (_, n) => ({ content: `zebra zebra zebra ${n}` })),
    );
    expect((await search(memory.store, 'zebra'))[0]?.[0]?.[1]).toBe(zebras[0]?.id);
    expect(memory.gone).toHaveLength(2);
    await settled(memory.gone);
    // Deleted by another store, then a thousand other records come in: the refreshes of
    // searches that do not meet the deleted start sweeps that drop them.
    const ids = zebras.map((result) => result.id);
    await a.forget({ ids: ids.slice(0, 500) });
    await a.forget({ ids: ids.slice(500), mode: 'hard' });
    await a.rememberMany(
      texts(21, 1_000, 6).map((text, n) => ({ content: `${text} number ${n}` })),
    );
    expect(await search(memory.store, 'number')).toEqual(await search(sql.store, 'number'));
    expect(memory.gone).toHaveLength(4);
    await settled(memory.gone);
    // A search they would have led: none of them is among its candidates, so it checks none.
    const zebra = await search(memory.store, 'zebra');
    expect(memory.gone).toHaveLength(4);
    expect(zebra).toEqual(await search(sql.store, 'zebra'));
    expect(zebra[0]).toEqual([['the zebra crossing', crossing, expect.any(Number)]]);
  });
});
