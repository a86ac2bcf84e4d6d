import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createEngine, planAccess } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import {
  adminQuery,
  describePostgres,
  dropSchema,
  PG_URL,
  PGVECTOR_URL,
  queryOn,
  uniqueSchema,
} from './database.js';
import { postgresBinDir } from './dedicated-server.js';

const run = promisify(execFile);
const bin = postgresBinDir();

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function openEngine(schema: string) {
  const engine = createEngine({
    store: createPostgresStore({ connectionString: PG_URL as string, schema, maxConnections: 2 }),
    embedder: createHashEmbedder({ dimensions: 384 }),
  });
  await engine.init();
  cleanup.push(() => engine.close());
  return engine;
}

async function recordsTable(schema: string) {
  const { rows } = await adminQuery(
    `SELECT c.reloptions, pg_relation_size(c.reltoastrelid) AS toast_bytes,
            (SELECT max(pg_column_size(r.*)) FROM "${schema}".mnemo_records r) AS widest_row
     FROM pg_class c WHERE c.oid = $1::regclass`,
    [`"${schema}".mnemo_records`],
  );
  return rows[0] as { reloptions: string[] | null; toast_bytes: string; widest_row: number | null };
}

/** mnemo_term_stats' rows as [term, agent, org key, scope, memory type, df, max tf, min length], in key order. */
async function termStats(schema: string) {
  const { rows } = await adminQuery(
    `SELECT * FROM "${schema}".mnemo_term_stats ORDER BY term, agent_id, org_key, scope, memory_type`,
  );
  return rows.map((r) => [
    r.term,
    r.agent_id,
    r.org_key,
    r.scope,
    r.memory_type,
    Number(r.df),
    r.max_tf,
    r.min_length,
  ]);
}

/** mnemo_lexical_stats' rows as [agent, org key, scope, memory type, records, total length], in key order. */
async function lexicalStats(schema: string) {
  const { rows } = await adminQuery(
    `SELECT * FROM "${schema}".mnemo_lexical_stats ORDER BY agent_id, org_key, scope, memory_type`,
  );
  return rows.map((r) => [
    r.agent_id,
    r.org_key,
    r.scope,
    r.memory_type,
    Number(r.records),
    Number(r.total_length),
  ]);
}

/**
 * mnemo_record_tags' rows as [tag, content, agent, scope, memory type], the
 * tag found by its key among the record's own tags, sorted.
 */
async function recordTags(schema: string) {
  const { rows } = await adminQuery(
    `SELECT (SELECT t FROM unnest(r.tags) AS t WHERE sha256(convert_to(t, 'UTF8')) = tg.tag_key) AS tag,
            r.content, tg.agent_id, tg.scope, tg.memory_type
     FROM "${schema}".mnemo_record_tags tg JOIN "${schema}".mnemo_records r ON r.id = tg.record_id
     ORDER BY 1, 2`,
  );
  return rows.map((r) => [r.tag, r.content, r.agent_id, r.scope, r.memory_type]);
}

describePostgres('record storage', () => {
  it('keeps a record with a 384-dimensional embedding whole in its page, not in TOAST', async () => {
    const schema = uniqueSchema('storage');
    cleanup.push(() => dropSchema(schema));
    const a = (await openEngine(schema)).as('agent-a');
    await a.remember({ content: `a long turn of a conversation ${'about hiking '.repeat(40)}` });
    const table = await recordsTable(schema);
    expect(table.reloptions).toEqual(['toast_tuple_target=8160']);
    // Past the default 2 kB, PostgreSQL would have moved the embedding out of the row.
    expect(table.widest_row).toBeGreaterThan(2032);
    expect(Number(table.toast_bytes)).toBe(0);
  });

  it('indexes the filter columns of a record with the longest ids, owner, org and thread', async () => {
    // mnemo_records_filters holds these beside the id; a btree entry must stay under 2.7 kB.
    const schema = uniqueSchema('storage');
    cleanup.push(() => dropSchema(schema));
    const id = '€'.repeat(256);
    const engine = createEngine({
      store: createPostgresStore({ connectionString: PG_URL as string, schema, maxConnections: 2 }),
      ids: () => id,
    });
    await engine.init();
    cleanup.push(() => engine.close());
    const a = engine.as('a'.repeat(256), { orgId: 'o'.repeat(256) });
    const written = await a.remember({ content: 'hiking boots', threadId: '🥾'.repeat(128) });
    expect(written.id).toBe(id);
    const found = await a.recall({
      query: 'boots',
      filters: { threadId: '🥾'.repeat(128), memoryTypes: ['episodic'] },
    });
    expect(found.hits.map((hit) => hit.record.id)).toEqual([id]);
    const { rows } = await adminQuery(
      `SELECT max(octet_length(id) + octet_length(agent_id) + octet_length(org_id)
                  + octet_length(thread_id)) AS bytes
       FROM "${schema}".mnemo_records`,
    );
    expect(Number(rows[0].bytes)).toBe(768 + 256 + 256 + 512);
  });

  it("drops a plan's stats with the plan, whatever the forget mode", async () => {
    const schema = uniqueSchema('plan_stats');
    cleanup.push(() => dropSchema(schema));
    const engine = (await openEngine(schema)).with({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const plans = planAccess(agent);
    const stats = async () =>
      (await adminQuery(`SELECT record_id FROM "${schema}".mnemo_plan_stats ORDER BY 1`)).rows.map(
        (row) => row.record_id,
      );
    const ids: string[] = [];
    for (const mode of ['soft', 'hard', 'redact'] as const) {
      const { id } = await plans.writePlan({ query: `plan ${mode}`, payload: {}, tokens: [mode] });
      await plans.updatePlanStats(id, () => ({
        runningOutcome: 0.5,
        replays: 1,
        failures: 0,
        details: {},
      }));
      ids.push(id);
    }
    expect(await stats()).toEqual([...ids].sort());
    for (const [i, mode] of (['soft', 'hard', 'redact'] as const).entries()) {
      await agent.forget({ ids: [ids[i] as string], mode });
    }
    expect(await stats()).toEqual([]);
  });

  it("counts each plan token's plans in mnemo_plan_token_df as plans are written and forgotten", async () => {
    const schema = uniqueSchema('plan_df');
    cleanup.push(() => dropSchema(schema));
    const engine = (await openEngine(schema)).with({ experienceMemory: true });
    const agent = engine.as('agent-a');
    const plans = planAccess(agent);
    const counts = async () =>
      Object.fromEntries(
        (
          await adminQuery(
            `SELECT t.token, d.df::int AS df FROM unnest($1::text[]) AS t(token)
             JOIN "${schema}".mnemo_plan_token_df d ON d.key = md5(t.token) ORDER BY 1`,
            [['alpha', 'beta', 'gamma', 'delta']],
          )
        ).rows.map((row) => [row.token, row.df]),
      );
    const write = (query: string, tokens: string[]) =>
      plans.writePlan({ query, payload: {}, tokens }).then((result) => result.id);
    // Three in one group, one alone.
    const ids: string[] = await Promise.all([
      write('plan one', ['alpha', 'beta']),
      write('plan two', ['alpha', 'gamma']),
      write('plan three', ['alpha', 'beta', 'gamma']),
    ]);
    ids.push(await write('plan four', ['delta', 'alpha']));
    expect(await counts()).toEqual({ alpha: 4, beta: 2, gamma: 2, delta: 1 });
    // A soft delete keeps a plan's keys and their counts; a hard delete and a redaction drop them.
    await agent.forget({ ids: [ids[0] as string], mode: 'soft' });
    expect(await counts()).toEqual({ alpha: 4, beta: 2, gamma: 2, delta: 1 });
    await agent.forget({ ids: [ids[1] as string, ids[2] as string], mode: 'hard' });
    expect(await counts()).toEqual({ alpha: 2, beta: 1, gamma: 0, delta: 1 });
    await agent.forget({ ids: [ids[3] as string], mode: 'redact' });
    expect(await counts()).toEqual({ alpha: 1, beta: 1, gamma: 0, delta: 0 });
  });

  it('with createSchema false, opens an existing schema and refuses a missing one, creating nothing', async () => {
    const schema = uniqueSchema('existing');
    cleanup.push(() => dropSchema(schema));
    const open = () =>
      createPostgresStore({ connectionString: PG_URL as string, schema, createSchema: false });
    const missing = open();
    await expect(missing.init()).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await missing.close();
    const namespaces = () =>
      adminQuery('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]).then((r) => r.rowCount);
    expect(await namespaces()).toBe(0);
    await (await openEngine(schema)).as('agent-a').remember({ content: 'now it exists' });
    const existing = open();
    await existing.init();
    await existing.close();
    expect(() =>
      createPostgresStore({ connectionString: PG_URL as string, createSchema: 'no' as never }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('migrates a schema from version 3 to 12', async () => {
    const schema = uniqueSchema('storage');
    cleanup.push(() => dropSchema(schema));
    const engine = await openEngine(schema);
    const a = engine.as('agent-a');
    await a.remember({ content: 'walking the dog, walking the cat', tags: ['pets', 'walks'] });
    await a.remember({ content: 'the dog sleeps', memoryType: 'semantic', tags: ['pets'] });
    await a.remember({ content: 'a dog for a day', expiresAt: new Date(Date.now() + 3_600_000) });
    await engine.as('agent-b').remember({ content: 'dog', scope: 'global' });
    // Neither a forgotten record nor a plan counts in the statistics or has tag rows.
    const forgotten = await a.remember({ content: 'a forgotten dog', tags: ['pets'] });
    await a.forget({ ids: [forgotten.id] });
    await planAccess(
      createEngine({ store: engine.store, experienceMemory: true }).as('agent-a'),
    ).writePlan({ query: 'dog plan', payload: { steps: [] }, tokens: ['dog', 'plan'] });
    await engine.close();
    cleanup.pop();
    await adminQuery(`ALTER TABLE "${schema}".mnemo_records RESET (toast_tuple_target)`);
    await adminQuery(`DROP TABLE "${schema}".mnemo_term_stats`);
    await adminQuery(`DROP TABLE "${schema}".mnemo_record_tags`);
    await adminQuery(`DROP TABLE "${schema}".mnemo_accesses`);
    // Dropping the column drops both indexes that include it (version 10's, built anew).
    await adminQuery(`ALTER TABLE "${schema}".mnemo_postings DROP COLUMN memory_type`);
    await adminQuery(
      `CREATE INDEX mnemo_postings_term_covering ON "${schema}".mnemo_postings (term)
         INCLUDE (record_id, tf, doc_length, agent_id, org_key, scope, expires_at)`,
    );
    // mnemo_lexical_stats as version 3 made it: per owner and scope.
    await adminQuery(`DELETE FROM "${schema}".mnemo_lexical_stats`);
    await adminQuery(`ALTER TABLE "${schema}".mnemo_lexical_stats DROP COLUMN memory_type`);
    await adminQuery(
      `ALTER TABLE "${schema}".mnemo_lexical_stats ADD PRIMARY KEY (agent_id, org_key, scope)`,
    );
    await adminQuery(
      `INSERT INTO "${schema}".mnemo_lexical_stats
         SELECT agent_id, coalesce(org_id, ''), scope, count(*), sum(doc_length) FROM "${schema}".mnemo_records
         WHERE NOT is_plan AND deleted_at IS NULL AND expires_at IS NULL GROUP BY 1, 2, 3`,
    );
    await adminQuery(`DROP INDEX "${schema}".mnemo_records_thread`);
    await adminQuery(`DROP INDEX "${schema}".mnemo_records_filters`);
    await adminQuery(`DROP FUNCTION "${schema}".mnemo_written_now() CASCADE`);
    await adminQuery(`DROP TABLE "${schema}".mnemo_cache_epoch`);
    await adminQuery(`ALTER TABLE "${schema}".mnemo_records DROP COLUMN written_xid`);
    await adminQuery(`DELETE FROM "${schema}".mnemo_migrations WHERE version >= 4`);
    expect((await recordsTable(schema)).reloptions).toBeNull();
    await openEngine(schema);
    expect((await recordsTable(schema)).reloptions).toEqual(['toast_tuple_target=8160']);
    const { rows } = await adminQuery(
      `SELECT version FROM "${schema}".mnemo_migrations ORDER BY version`,
    );
    expect(rows.map((row) => Number(row.version))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const indexes = await adminQuery(
      `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname IN
         ('mnemo_postings_expiring', 'mnemo_postings_term_covering', 'mnemo_records_filters',
          'mnemo_records_thread', 'mnemo_records_written') ORDER BY 1`,
      [schema],
    );
    expect(indexes.rows.map((row) => row.indexname)).toEqual([
      'mnemo_postings_expiring',
      'mnemo_postings_term_covering',
      'mnemo_records_filters',
      'mnemo_records_thread',
      'mnemo_records_written',
    ]);
    const triggers = await adminQuery(
      `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY 1`,
      [`"${schema}".mnemo_records`],
    );
    expect(triggers.rows.map((row) => row.tgname)).toEqual([
      'mnemo_records_written_insert',
      'mnemo_records_written_update',
    ]);
    // Each posting carries its record's memory type.
    const postings = await adminQuery(
      `SELECT r.content, po.term, po.memory_type FROM "${schema}".mnemo_postings po
       JOIN "${schema}".mnemo_records r ON r.id = po.record_id ORDER BY 1, 2`,
    );
    expect(postings.rows.map((row) => [row.content, row.term, row.memory_type])).toEqual([
      ['a dog for a day', 'dai', 'episodic'],
      ['a dog for a day', 'dog', 'episodic'],
      ['dog', 'dog', 'episodic'],
      ['the dog sleeps', 'dog', 'semantic'],
      ['the dog sleeps', 'sleep', 'semantic'],
      ['walking the dog, walking the cat', 'cat', 'episodic'],
      ['walking the dog, walking the cat', 'dog', 'episodic'],
      ['walking the dog, walking the cat', 'walk', 'episodic'],
    ]);
    // The postings without an expiry, counted per term, owner, scope and memory type.
    expect(await termStats(schema)).toEqual([
      ['cat', 'agent-a', '', 'private', 'episodic', 1, 1, 4],
      ['dog', 'agent-a', '', 'private', 'episodic', 1, 1, 4],
      ['dog', 'agent-a', '', 'private', 'semantic', 1, 1, 2],
      ['dog', 'agent-b', '', 'global', 'episodic', 1, 1, 1],
      ['sleep', 'agent-a', '', 'private', 'semantic', 1, 1, 2],
      ['walk', 'agent-a', '', 'private', 'episodic', 1, 2, 4],
    ]);
    // The records without an expiry, counted per owner, scope and memory type.
    expect(await lexicalStats(schema)).toEqual([
      ['agent-a', '', 'private', 'episodic', 1, 4],
      ['agent-a', '', 'private', 'semantic', 1, 2],
      ['agent-b', '', 'global', 'episodic', 1, 1],
    ]);
    // Each tag of a live record, keyed by its SHA-256.
    expect(await recordTags(schema)).toEqual([
      ['pets', 'the dog sleeps', 'agent-a', 'private', 'semantic'],
      ['pets', 'walking the dog, walking the cat', 'agent-a', 'private', 'episodic'],
      ['walks', 'walking the dog, walking the cat', 'agent-a', 'private', 'episodic'],
    ]);
    // A recall filtered by memory type counts only the records of that type.
    const filtered = await (await openEngine(schema))
      .as('agent-a')
      .recall({ query: 'dog', strategy: 'lexical', filters: { memoryTypes: ['semantic'] } });
    expect(filtered.hits.map((hit) => hit.record.content)).toEqual(['the dog sleeps']);
    // Records written before version 7 have no writing transaction; those after have one.
    await (await openEngine(schema)).as('agent-a').remember({ content: 'a later dog' });
    const written = await adminQuery(
      `SELECT content, written_xid IS NOT NULL AS known FROM "${schema}".mnemo_records ORDER BY content`,
    );
    expect(written.rows.map((row) => [row.content, row.known])).toEqual([
      ['a dog for a day', false],
      ['a forgotten dog', false],
      ['a later dog', true],
      ['dog', false],
      ['dog plan', false],
      ['the dog sleeps', false],
      ['walking the dog, walking the cat', false],
    ]);
  });

  for (const [kind, url, options] of [
    ['real[]', PG_URL, { vector: 'array' }],
    ['vector', PGVECTOR_URL, { vector: 'pgvector' }],
    ['vector(16)', PGVECTOR_URL, { vector: 'pgvector', vectorDimensions: 16 }],
  ] as const) {
    it.skipIf(url === undefined || bin === null)(
      `survives pg_dump and pg_restore, as pg_upgrade runs them (${kind})`,
      async () => {
        const schema = uniqueSchema('dump');
        cleanup.push(() => dropSchema(schema, url));
        const engine = createEngine({
          store: createPostgresStore({ connectionString: url as string, schema, ...options }),
          embedder: createHashEmbedder({ dimensions: 16 }),
        });
        await engine.init();
        await engine.as('agent-a').remember({ content: 'the dog sleeps' });
        await engine.close();
        const folder = mkdtempSync('/tmp/mnemo-dump-');
        cleanup.push(async () => rmSync(folder, { recursive: true, force: true }));
        const dump = join(folder, 'dump');
        await run(join(bin as string, 'pg_dump'), ['-Fc', '-n', schema, '-f', dump, url as string]);
        await dropSchema(schema, url);
        // The whole restore in one transaction, stopping at the first error (its schema part
        // runs with an empty search_path, as pg_upgrade's does).
        await run(join(bin as string, 'pg_restore'), [
          '--single-transaction',
          '--exit-on-error',
          '-d',
          url as string,
          dump,
        ]);
        const triggers = await queryOn(
          url as string,
          `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY 1`,
          [`"${schema}".mnemo_records`],
        );
        expect(triggers.rows.map((row) => row.tgname)).toEqual([
          'mnemo_records_written_insert',
          'mnemo_records_written_update',
        ]);
      },
    );
  }

  it('refuses a schema of a version newer than it knows, changing nothing', async () => {
    const schema = uniqueSchema('storage');
    cleanup.push(() => dropSchema(schema));
    await (await openEngine(schema)).close();
    cleanup.pop();
    await adminQuery(
      // The next version, the first it does not know.
      `INSERT INTO "${schema}".mnemo_migrations (version, name) VALUES (13, 'later')`,
    );
    const store = createPostgresStore({ connectionString: PG_URL as string, schema });
    await expect(store.init()).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `schema "${schema}" is at version 13; this @mnemo/store-postgres knows versions up to 12: upgrade it`,
    });
    await store.close();
    const { rows } = await adminQuery(
      `SELECT version FROM "${schema}".mnemo_migrations ORDER BY version`,
    );
    expect(rows.map((row) => Number(row.version))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
    ]);
  });

  it('keeps a row per tag of each live, non-plan record, for tags of any length', async () => {
    const schema = uniqueSchema('tags');
    cleanup.push(() => dropSchema(schema));
    const engine = createEngine({
      store: createPostgresStore({ connectionString: PG_URL as string, schema, maxConnections: 2 }),
      limits: { maxTagLength: 5000 },
      experienceMemory: true,
    });
    await engine.init();
    cleanup.push(() => engine.close());
    const a = engine.as('agent-a', { orgId: 'acme' });
    // Longer than a btree entry may hold: the index is on the tag's SHA-256.
    const long = `long-${'€'.repeat(4000)}`;
    const ids: string[] = [];
    for (const [content, tags] of [
      ['red apples', ['fruit', long]],
      ['green tea', ['drink']],
      ['red wine', ['drink', 'fruit']],
      ['apple pie', ['fruit', 'baking']],
      ['plain water', []],
    ] as const) {
      ids.push((await a.remember({ content, tags: [...tags] })).id);
    }
    await a.rememberMany([
      { content: 'tea cake', tags: ['baking', long], expiresAt: new Date(Date.now() + 3_600_000) },
      { content: 'cider', tags: ['drink'], scope: 'public', memoryType: 'semantic' },
    ]);
    await planAccess(a).writePlan({ query: 'bake a pie', payload: {}, tokens: ['bake', 'pie'] });
    await a.forget({ ids: [ids[1] as string], mode: 'soft' });
    await a.forget({ ids: [ids[2] as string], mode: 'hard' });
    await a.forget({ ids: [ids[3] as string], mode: 'redact' });
    expect(await recordTags(schema)).toEqual(
      [
        ['drink', 'cider', 'agent-a', 'public', 'semantic'],
        ['fruit', 'red apples', 'agent-a', 'private', 'episodic'],
        [long, 'red apples', 'agent-a', 'private', 'episodic'],
        [long, 'tea cake', 'agent-a', 'private', 'episodic'],
        ['baking', 'tea cake', 'agent-a', 'private', 'episodic'],
      ].sort((x, y) => (x.join('\u0000') < y.join('\u0000') ? -1 : 1)),
    );
    const found = await a.recall({
      query: 'red tea',
      strategy: 'lexical',
      filters: { tagsAny: [long] },
    });
    expect(found.hits.map((hit) => hit.record.content)).toEqual(['red apples', 'tea cake']);
  });

  it("counts a write's records of one owner, scope and type into one statistics row per term: largest tf, shortest length", async () => {
    const schema = uniqueSchema('term_stats');
    cleanup.push(() => dropSchema(schema));
    const engine = await openEngine(schema);
    await engine
      .as('agent-a')
      .rememberMany([
        { content: 'plum plum plum' },
        { content: 'plum with jam, toast and fresh bread' },
        { content: 'fresh fresh bread' },
      ]);
    expect(
      (await termStats(schema)).filter(([term]) => term !== 'jam' && term !== 'toast'),
    ).toEqual([
      ['bread', 'agent-a', '', 'private', 'episodic', 2, 1, 3],
      ['fresh', 'agent-a', '', 'private', 'episodic', 2, 2, 3],
      ['plum', 'agent-a', '', 'private', 'episodic', 2, 3, 3],
    ]);
    expect(await lexicalStats(schema)).toEqual([['agent-a', '', 'private', 'episodic', 3, 11]]);
  });

  it('keeps mnemo_term_stats and mnemo_lexical_stats equal to the postings and records without an expiry', async () => {
    const schema = uniqueSchema('term_stats');
    cleanup.push(() => dropSchema(schema));
    const engine = await openEngine(schema);
    const a = engine.as('agent-a', { orgId: 'acme' });
    const later = new Date(Date.now() + 3_600_000);
    const ids: string[] = [];
    for (const [i, content] of [
      'red apples and green apples',
      'green tea',
      'red wine, red roses',
      'apples in a pie',
      'tea with apples',
    ].entries()) {
      ids.push((await a.remember({ content, scope: i % 2 === 0 ? 'private' : 'public' })).id);
    }
    const [expiring] = await a.rememberMany([
      { content: 'red tea', expiresAt: later },
      { content: 'green apples', scope: 'global' },
      { content: 'apple tea', memoryType: 'semantic' },
    ]);
    // Forgetting a record with an expiry takes nothing from the statistics: it was never in them.
    await a.forget({ ids: [expiring?.id as string], mode: 'soft' });
    await a.forget({ ids: [ids[0] as string], mode: 'soft' });
    await a.forget({ ids: [ids[1] as string], mode: 'hard' });
    await a.forget({ ids: [ids[2] as string], mode: 'redact' });
    const fromPostings = await adminQuery(
      `SELECT term, agent_id, org_key, scope, memory_type, count(*)::int AS df
       FROM "${schema}".mnemo_postings WHERE expires_at IS NULL
       GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
    );
    const stats = await termStats(schema);
    expect(stats.map((row) => row.slice(0, 6))).toEqual(
      fromPostings.rows.map((r) => [r.term, r.agent_id, r.org_key, r.scope, r.memory_type, r.df]),
    );
    // The remaining records: 'apples in a pie' (public), 'tea with apples' (private),
    // 'green apples' (global), all episodic, and 'apple tea' (private, semantic). A row whose
    // count reached 0 is gone (no "red", "wine" or "rose" of the forgotten records is left);
    // the bounds of the others never tighten.
    expect(stats).toEqual([
      ['appl', 'agent-a', 'acme', 'global', 'episodic', 1, 1, 2],
      ['appl', 'agent-a', 'acme', 'private', 'episodic', 1, 2, 2],
      ['appl', 'agent-a', 'acme', 'private', 'semantic', 1, 1, 2],
      ['appl', 'agent-a', 'acme', 'public', 'episodic', 1, 1, 2],
      ['green', 'agent-a', 'acme', 'global', 'episodic', 1, 1, 2],
      ['pie', 'agent-a', 'acme', 'public', 'episodic', 1, 1, 2],
      ['tea', 'agent-a', 'acme', 'private', 'episodic', 1, 1, 2],
      ['tea', 'agent-a', 'acme', 'private', 'semantic', 1, 1, 2],
    ]);
    const fromRecords = await adminQuery(
      `SELECT agent_id, coalesce(org_id, '') AS org_key, scope, memory_type, count(*)::int AS n,
              sum(doc_length)::int AS len
       FROM "${schema}".mnemo_records WHERE deleted_at IS NULL AND expires_at IS NULL AND NOT is_plan
       GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    );
    expect(await lexicalStats(schema)).toEqual(
      fromRecords.rows.map((r) => [r.agent_id, r.org_key, r.scope, r.memory_type, r.n, r.len]),
    );
    expect(await lexicalStats(schema)).toEqual([
      ['agent-a', 'acme', 'global', 'episodic', 1, 2],
      ['agent-a', 'acme', 'private', 'episodic', 1, 2],
      ['agent-a', 'acme', 'private', 'semantic', 1, 2],
      ['agent-a', 'acme', 'public', 'episodic', 1, 2],
    ]);
  });
});
