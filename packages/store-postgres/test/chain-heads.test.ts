import { createEngine, type Engine, type MemoryHandle } from '@mnemo/core';
import { afterAll, afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { ownPool, type PostgresPool } from '../src/pool.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';
import { wrapClients } from './wrap-clients.js';

const schemas: string[] = [];
const engines: Engine[] = [];
const pools: PostgresPool[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  // A store leaves a pool it was given open.
  for (const pool of pools.splice(0)) await pool.end();
});
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

/** The store's own kind of pool, noting how each transaction learned its chain's head in `heads`. */
function notingPool(heads: string[]): PostgresPool {
  const inner = ownPool({ connectionString: PG_URL as string });
  pools.push(inner);
  return wrapClients(inner, (client, text) => {
    return (config, values) => {
      const statement = text(config);
      // Read under the row lock, or expected and checked.
      if (statement === 'INSERT INTO mnemo_audit_heads') heads.push('read');
      if (statement === 'WITH locked AS') heads.push('expected');
      return client.query(config, values);
    };
  });
}

/**
 * Opens engines on one fresh schema, as processes of their own (each its own
 * pool, noting in `heads` how it learned the chain's head), acting as agent-a.
 */
function opener(): (heads: string[]) => Promise<MemoryHandle> {
  const schema = uniqueSchema('chain_heads');
  schemas.push(schema);
  return async (heads) => {
    const engine = createEngine({
      store: createPostgresStore({ pool: notingPool(heads), schema, vector: 'array' }),
    });
    await engine.init();
    engines.push(engine);
    return engine.as('agent-a');
  };
}

describePostgres('audit chain heads', () => {
  it('appends after the head this process committed last, and reads it again when another process advanced the chain', async () => {
    const open = opener();
    const first: string[] = [];
    const other: string[] = [];
    const a = await open(first);
    const b = await open(other);
    const ids: string[] = [];
    const step = async (write: () => Promise<{ id: string } | object>) => {
      first.length = 0;
      const result = await write();
      if ('id' in result) ids.push(result.id);
      return [...first];
    };
    expect(await step(() => a.remember({ content: 'one' }))).toEqual(['read']);
    expect(await step(() => a.remember({ content: 'two' }))).toEqual(['expected']);
    expect(await step(() => a.recall({ query: 'one', strategy: 'lexical' }))).toEqual(['expected']);
    ids.push((await b.remember({ content: 'three' })).id);
    expect(other).toEqual(['read']);
    // Stale: the check fails, and the transaction runs again reading the head.
    expect(await step(() => a.remember({ content: 'four' }))).toEqual(['expected', 'read']);
    expect(await step(() => a.remember({ content: 'five' }))).toEqual(['expected']);
    // Twice stale in a row: the run again and the next two read the head first.
    ids.push((await b.remember({ content: 'six' })).id);
    expect(await step(() => a.remember({ content: 'seven' }))).toEqual(['expected', 'read']);
    ids.push((await b.remember({ content: 'eight' })).id);
    expect(await step(() => a.remember({ content: 'nine' }))).toEqual(['expected', 'read']);
    expect(await step(() => a.remember({ content: 'ten' }))).toEqual(['read']);
    expect(await step(() => a.remember({ content: 'eleven' }))).toEqual(['read']);
    expect(await step(() => a.remember({ content: 'twelve' }))).toEqual(['expected']);
    const audit = await engines[1]?.verifyAudit();
    expect([audit?.ok, audit?.events]).toEqual([true, 13]);
    const contents = await Promise.all(ids.map(async (id) => (await b.get(id)).content));
    expect(contents).toEqual([
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
      'eight',
      'nine',
      'ten',
      'eleven',
      'twelve',
    ]);
  });

  it('reads the head first for 1, 3, 7, … transactions after stale heads in a row, at most 63', async () => {
    const open = opener();
    const mine: string[] = [];
    const a = await open(mine);
    const b = await open([]);
    await a.remember({ content: 'a 0' });
    expect(mine).toEqual(['read']);
    // The other process advances the chain before each write of this one: every head this
    // one expects is stale, and after each stale head it reads the head for a while.
    const readsBetween: number[] = [];
    let reads = 0;
    for (let n = 1; readsBetween.length < 8; n += 1) {
      await b.remember({ content: `b ${n}` });
      mine.length = 0;
      await a.remember({ content: `a ${n}` });
      if (mine[0] === 'expected') {
        expect(mine).toEqual(['expected', 'read']);
        readsBetween.push(reads);
        reads = 0;
      } else {
        expect(mine).toEqual(['read']);
        reads += 1;
      }
    }
    // Reads between one stale head and the next: 1, 3, 7, … up to 63 after each, the run
    // again included (none before the first; after the first, that run again only).
    expect(readsBetween).toEqual([0, 0, 2, 6, 14, 30, 62, 62]);
  });

  it('runs again on a stale head however many transactions of this process append to the chain at once', async () => {
    const schema = uniqueSchema('chain_heads');
    schemas.push(schema);
    const heads: string[] = [];
    const engine = createEngine({
      store: createPostgresStore({ pool: notingPool(heads), schema, vector: 'array' }),
    });
    await engine.init();
    engines.push(engine);
    const a = engine.as('agent-a');
    await a.remember({ content: 'a note' });
    for (let round = 0; round < 5; round += 1) {
      const recalls = await Promise.all(
        Array.from({ length: 16 }, () => a.recall({ query: 'note', strategy: 'lexical' })),
      );
      expect(recalls.map((recall) => recall.hits.length)).toEqual(Array(16).fill(1));
    }
    const audit = await engine.verifyAudit();
    expect([audit.ok, audit.events]).toEqual([true, 81]);
    // Recalls expected the head and found it stale (each then read it), and some read it first.
    expect([heads.includes('expected'), heads.includes('read')]).toEqual([true, true]);
  });
});
