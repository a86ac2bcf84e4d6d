import { createEngine, planAccess } from '@mnemo/core';
import { createHashEmbedder } from '@mnemo/core/testing';
import { afterEach, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { adminQuery, describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function openEngine(schema: string) {
  const engine = createEngine({
    store: createPostgresStore({ connectionString: PG_URL, schema, maxConnections: 2 }),
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

  it('migrates a schema from version 3 to 4', async () => {
    const schema = uniqueSchema('storage');
    cleanup.push(() => dropSchema(schema));
    await (await openEngine(schema)).close();
    await adminQuery(`ALTER TABLE "${schema}".mnemo_records RESET (toast_tuple_target)`);
    await adminQuery(`DELETE FROM "${schema}".mnemo_migrations WHERE version = 4`);
    expect((await recordsTable(schema)).reloptions).toBeNull();
    await openEngine(schema);
    expect((await recordsTable(schema)).reloptions).toEqual(['toast_tuple_target=8160']);
    const { rows } = await adminQuery(
      `SELECT version FROM "${schema}".mnemo_migrations ORDER BY version`,
    );
    expect(rows.map((row) => Number(row.version))).toEqual([1, 2, 3, 4]);
  });
});
