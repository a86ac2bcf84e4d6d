import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('fixtures/locomo-tiny.json', import.meta.url));
const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PG_URL = process.env.MNEMO_TEST_PG_URL;
const scratch = mkdtempSync(join(tmpdir(), 'bench-interrupt-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * Runs `bench remember` on the fixture, waits until `inRawBaseline()` says a
 * raw baseline's table exists, then sends SIGINT as Ctrl-C does, and returns
 * the exit code and stderr.
 */
async function interruptRawBaseline(
  args: string[],
  env: Record<string, string>,
  inRawBaseline: () => Promise<boolean>,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [main, 'remember', '--data', fixture, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  while (running && !(await inRawBaseline())) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  expect(running, `the benchmark ended before its raw baseline: ${stderr}`).toBe(true);
  child.kill('SIGINT');
  return { code: await exited, stderr };
}

describe('bench remember: Ctrl-C during the raw baselines', () => {
  it('DuckDB: removes the raw temp folder and exits 130', async () => {
    const tmp = mkdtempSync(join(scratch, 'tmp-'));
    const { code, stderr } = await interruptRawBaseline(
      ['--n', '1000'],
      { TMPDIR: tmp },
      async () => readdirSync(tmp).some((name) => name.startsWith('mnemo-bench-raw-')),
    );
    expect(code, stderr).toBe(130);
    expect(readdirSync(tmp)).toEqual([]);
  }, 120_000);

  it.skipIf(PG_URL === undefined)(
    'PostgreSQL: drops the raw schema and exits 130',
    async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      const rawSchemas = async () =>
        (
          await client.query<{ name: string }>(
            "SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 'mnemo\\_bench\\_raw\\_%' ORDER BY 1",
          )
        ).rows.map((row) => row.name);
      try {
        const before = await rawSchemas();
        const { code, stderr } = await interruptRawBaseline(
          ['--n', '1000', '--store', 'postgres', '--pg-url', PG_URL as string],
          {},
          async () => (await rawSchemas()).length > before.length,
        );
        expect(code, stderr).toBe(130);
        expect(await rawSchemas()).toEqual(before);
      } finally {
        await client.end();
      }
    },
    120_000,
  );
});
