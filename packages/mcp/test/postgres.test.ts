import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPostgresStore } from '@mnemo/store-postgres';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, mnemo, mnemoJson, ok, tempDir } from './fixture.js';
import { fillRichStore } from './rich-store.js';

/**
 * The PostgreSQL server of `MNEMO_TEST_PG_URL` (`.ci/run` starts one). Without it these
 * tests are skipped with a message, except under CI, where a missing server fails the run.
 */
const PG_URL = process.env.MNEMO_TEST_PG_URL;
if (PG_URL === undefined) {
  if (process.env.CI) {
    throw new Error('MNEMO_TEST_PG_URL is not set: CI must start PostgreSQL (see .ci/postgres.sh)');
  }
  console.warn(
    '\n  @mnemo/mcp PostgreSQL tests skipped: set MNEMO_TEST_PG_URL=postgres://user:password@127.0.0.1:port/db to run them\n',
  );
}

const schemas: string[] = [];
/** A schema of its own for each use, dropped after the file's tests. */
function uniqueSchema(): string {
  const schema = `mcp_cli_${process.pid}_${schemas.length + 1}`;
  schemas.push(schema);
  return schema;
}

afterAll(async () => {
  if (PG_URL === undefined || schemas.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
});

describe.skipIf(PG_URL === undefined)('the CLI and server on PostgreSQL', () => {
  const store = `postgres:${PG_URL}`;

  it('remembers and recalls in a schema named by --pg-schema', () => {
    const schema = uniqueSchema();
    const at = ['--store', store, '--pg-schema', schema];
    const stored = mnemoJson(['remember', 'postgres keeps the heron note', '--agent', 'a', ...at]);
    expect(stored.deduplicated).toBe(false);
    const found = mnemoJson(['recall', 'heron', '--agent', 'a', ...at]);
    expect(found.hits).toEqual([
      {
        record: expect.objectContaining({ id: stored.id, agent_id: 'a' }),
        score: expect.any(Number),
      },
    ]);
    expect(mnemoJson(['recall', 'heron', '--agent', 'b', ...at]).hits).toEqual([]);
    expect(mnemo(['audit', 'verify', ...at]).stdout).toBe('audit ok: 3 events in 2 chains\n');
    // A bare postgres:// URL is accepted as the store too.
    expect(
      mnemoJson([
        'recall',
        'heron',
        '--agent',
        'a',
        '--store',
        PG_URL as string,
        '--pg-schema',
        schema,
      ]).hits,
    ).toHaveLength(1);
  });

  it('refuses a schema that does not exist for commands that only read, creating nothing', async () => {
    const schema = uniqueSchema();
    const at = ['--store', store, '--pg-schema', schema];
    for (const args of [
      ['recall', 'heron', '--agent', 'a', ...at],
      ['export', ...at],
      ['audit', 'verify', ...at],
      ['plans', ...at],
    ]) {
      const result = mnemo(args);
      expect([args[0], result.code, result.stderr]).toEqual([
        args[0],
        1,
        `mnemo: NOT_FOUND: no mnemo schema "${schema}" in this database (createSchema is false)\n`,
      ]);
    }
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      expect(found.rows).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('exports PostgreSQL, imports into DuckDB and into an empty schema: identical records, passing audit', async () => {
    const dir = tempDir();
    await fillRichStore(
      createPostgresStore({ connectionString: PG_URL as string, schema: uniqueSchema() }),
    );
    const source = ['--store', store, '--pg-schema', schemas.at(-1) as string];
    const dump = mnemo(['export', ...source, '--out', join(dir, 'pg.ndjson')]);
    expect(dump.code).toBe(0);
    const text = readFileSync(join(dir, 'pg.ndjson'), 'utf8');
    expect(text.trimEnd().split('\n')).toHaveLength(8);

    // PostgreSQL → DuckDB → PostgreSQL: every record identical at each step.
    const duck = ['--store', `duckdb:${join(dir, 'copy.duckdb')}`];
    expect(mnemoJson(['import', '--in', join(dir, 'pg.ndjson'), ...duck])).toEqual({
      imported: 8,
      skipped: 0,
    });
    expect(mnemo(['export', ...duck]).stdout).toBe(text);
    const target = ['--store', store, '--pg-schema', uniqueSchema()];
    const piped = mnemo(['import', ...target], { input: mnemo(['export', ...duck]).stdout });
    expect(piped.code).toBe(0);
    expect(mnemo(['export', ...target]).stdout).toBe(text);
    expect(mnemoJson(['audit', 'verify', ...target])).toMatchObject({ ok: true, events: 8 });
    expect(mnemoJson(['plans', ...target]).plans).toEqual([
      expect.objectContaining({ owner: 'acme/agent-a', replays: 0 }),
      expect.objectContaining({ owner: 'acme/agent-b', replays: 0 }),
    ]);
    // The replay counts come from the source's audit log, which an export does not carry.
    expect(
      (mnemoJson(['plans', ...source]).plans as { replays: number }[]).map((plan) => plan.replays),
    ).toEqual([2, 0]);
  });

  it('serves MCP over stdio on PostgreSQL', async () => {
    const schema = uniqueSchema();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--agent', 'pg-agent', '--store', store, '--pg-schema', schema],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'mnemo-pg-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const stored = await ok(client, 'mnemo.remember', { content: 'served from postgres' });
      expect(
        ((await ok(client, 'mnemo.recall', { query: 'postgres' })).hits as unknown[]).length,
      ).toBe(1);
      expect(await ok(client, 'mnemo.verify', {})).toMatchObject({ ok: true, chain: 'pg-agent' });
      expect(stored.id).toEqual(expect.any(String));
    } finally {
      await client.close();
    }
  });
});
