import { MnemoError } from '@mnemo/core';
import { afterAll, expect, it } from 'vitest';
import { runDemo } from '../src/demo.js';
import { maskUrl, type StoreSpec } from '../src/store-spec.js';
import { UsageError } from '../src/usage-error.js';
import { freshReport, gardenOptions, keptReport, tickingClock } from './garden-fixture.js';
import {
  adminQuery,
  describePostgres,
  dropSchema,
  pgUrl,
  schemaTables,
  uniqueSchema,
  withPassword,
} from './postgres-server.js';

/**
 * The store's tables are its business (it adds them with its migrations); the demo relies on
 * every one of them being named `mnemo_…`, as that is what it agrees to drop.
 */
function expectMnemoTables(tables: string[] | null): void {
  expect(tables).toEqual(expect.arrayContaining(['mnemo_migrations', 'mnemo_records']));
  expect(tables?.filter((name) => !name.startsWith('mnemo_'))).toEqual([]);
}

describePostgres('runDemo on PostgreSQL', () => {
  const created: string[] = [];
  afterAll(async () => {
    for (const schema of created) await dropSchema(schema);
  });
  const schemaFor = (prefix: string) => {
    const schema = uniqueSchema(prefix);
    created.push(schema);
    return schema;
  };
  const postgres = (schema: string): StoreSpec => ({ kind: 'postgres', url: pgUrl(), schema });

  it('runs the fixture in its own schema with the counts of DuckDB, fresh each time unless kept', async () => {
    const schema = schemaFor('demo_run');
    const database = { store: 'postgres' as const, url: maskUrl(pgUrl()), schema };
    const fresh = freshReport({ ...database, kept: false });
    const options = { ...gardenOptions, store: postgres(schema) };

    expect(await runDemo({ ...options, now: tickingClock() })).toEqual(fresh);
    expectMnemoTables(await schemaTables(schema));
    // No embedder, no extension: embeddings are a plain real[].
    const { rows: columns } = await adminQuery(
      `SELECT udt_name FROM information_schema.columns
        WHERE table_schema = $1 AND table_name = 'mnemo_records' AND column_name = 'embedding'`,
      [schema],
    );
    expect(columns).toEqual([{ udt_name: '_float4' }]);
    // The second fresh run drops the first's schema: the same counts again, not 5 hits.
    expect(await runDemo({ ...options, now: tickingClock() })).toEqual(fresh);

    const kept = await runDemo({ ...options, keep: true, now: tickingClock() });
    expect(kept).toMatchObject(keptReport({ ...database, kept: true }));
  });

  it('creates a missing schema with --keep too', async () => {
    const schema = schemaFor('demo_keep');
    expect(await schemaTables(schema)).toBeNull();
    const report = await runDemo({
      ...gardenOptions,
      store: postgres(schema),
      keep: true,
      now: tickingClock(),
    });
    expect(report.planHits).toBe(2);
    expectMnemoTables(await schemaTables(schema));
  });

  it('refuses to drop a schema that holds anything but mnemo tables, and leaves it as it was', async () => {
    const schema = schemaFor('demo_foreign');
    await adminQuery(`CREATE SCHEMA "${schema}"`);
    await adminQuery(`CREATE TABLE "${schema}".notes (body text)`);
    await adminQuery(`INSERT INTO "${schema}".notes VALUES ('keep me')`);
    const run = runDemo({ ...gardenOptions, store: postgres(schema) });
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow(
      `--pg-schema: the schema ${schema} holds objects that are not mnemo's (table notes); refusing to drop it`,
    );
    expect(await schemaTables(schema)).toEqual(['notes']);
    const { rows } = await adminQuery(`SELECT body FROM "${schema}".notes`);
    expect(rows).toEqual([{ body: 'keep me' }]);
  });

  it("takes only names starting with mnemo_ for mnemo's, and names at most three others", async () => {
    const near = schemaFor('demo_near');
    await adminQuery(`CREATE SCHEMA "${near}"`);
    await adminQuery(`CREATE TABLE "${near}".mnemonic (body text)`);
    await adminQuery(`CREATE VIEW "${near}".recent AS SELECT 1 AS one`);
    await expect(runDemo({ ...gardenOptions, store: postgres(near) })).rejects.toThrow(
      `--pg-schema: the schema ${near} holds objects that are not mnemo's (table mnemonic, view recent); refusing to drop it`,
    );
    const many = schemaFor('demo_many');
    await adminQuery(`CREATE SCHEMA "${many}"`);
    for (const name of ['a', 'b', 'c', 'd']) {
      await adminQuery(`CREATE TABLE "${many}".${name} (x int)`);
    }
    await expect(runDemo({ ...gardenOptions, store: postgres(many) })).rejects.toThrow(
      `--pg-schema: the schema ${many} holds objects that are not mnemo's (table a, table b, table c); refusing to drop it`,
    );
    expect(await schemaTables(many)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('never drops the public schema', async () => {
    await expect(runDemo({ ...gardenOptions, store: postgres('public') })).rejects.toThrow(
      '--pg-schema: refusing to drop the schema public; name a schema of its own, or use --keep',
    );
  });

  it('reports a wrong password as STORE_UNAVAILABLE, fresh or kept', async () => {
    const url = withPassword(pgUrl(), 'not-the-password');
    for (const keep of [false, true]) {
      const schema = schemaFor('demo_badpw');
      const run = runDemo({ ...gardenOptions, keep, store: { kind: 'postgres', url, schema } });
      await expect(run).rejects.toSatisfy((error) =>
        MnemoError.hasCode(error, 'STORE_UNAVAILABLE'),
      );
      await expect(run).rejects.toThrow('password authentication failed');
      expect(await schemaTables(schema)).toBeNull();
    }
  });
});
