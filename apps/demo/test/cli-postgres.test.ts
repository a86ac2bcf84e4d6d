import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import type { DemoReport } from '../src/report.js';
import { maskUrl } from '../src/store-spec.js';
import { fixtures } from './garden-fixture.js';
import {
  describePostgres,
  dropSchema,
  pgUrl,
  schemaTables,
  uniqueSchema,
  withPassword,
} from './postgres-server.js';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), 'mnemo-demo-cli-pg-'));

function demo(...args: string[]) {
  const result = spawnSync(process.execPath, [main, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describePostgres('the demo program on PostgreSQL', () => {
  const created: string[] = [];
  afterAll(async () => {
    for (const schema of created) await dropSchema(schema);
  });

  it('runs the default corpus and questions in its own schema, and replays plans', async () => {
    const schema = uniqueSchema('demo_cli');
    created.push(schema);
    const { code, stdout, stderr } = demo(
      '--store',
      `postgres:${pgUrl()}`,
      '--pg-schema',
      schema,
      '--json',
    );
    expect(stderr).toContain('ingesting');
    expect(code).toBe(0);
    const report = JSON.parse(stdout.trimEnd().split('\n').at(-1) as string) as DemoReport;
    expect(report.database).toEqual({
      store: 'postgres',
      url: maskUrl(pgUrl()),
      schema,
      kept: false,
    });
    expect(report.corpus.source).toBe('default');
    expect(report.planHits).toBeGreaterThanOrEqual(1);
    expect(report.planHits + report.planMisses).toBe(report.questions);
    expect(report.retrievalCalls).toEqual({ made: report.planMisses, saved: report.planHits });
    expect(report.plansNotCached).toBeGreaterThanOrEqual(1);
    expect(report.audit.ok).toBe(true);
    expect(await schemaTables(schema)).toContain('mnemo_records');
    // Nothing printed holds the password.
    const password = new URL(pgUrl()).password;
    if (password.length >= 4) expect(stdout + stderr).not.toContain(password);
  });

  it.each([
    ['fresh', []],
    // With --keep the store's own connection fails; its 'PostgreSQL: ' prefix is not repeated.
    ['kept', ['--keep']],
  ])(
    'exits 1 with one line on stderr, without a stack trace, for a wrong password (%s)',
    async (_, keep) => {
      const schema = uniqueSchema('demo_cli_badpw');
      created.push(schema);
      const url = withPassword(pgUrl(), 'wrong-password-for-the-demo');
      const { code, stdout, stderr } = demo(
        '--store',
        `postgres:${url}`,
        '--pg-schema',
        schema,
        '--corpus',
        join(fixtures, 'garden'),
        ...keep,
      );
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toBe(
        `mnemo demo: store unavailable (PostgreSQL ${maskUrl(url)}, schema ${schema}): ` +
          `connecting failed: password authentication failed for user "${decodeURIComponent(new URL(url).username)}"\n`,
      );
      expect(stderr).not.toContain('wrong-password-for-the-demo');
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(await schemaTables(schema)).toBeNull();
    },
  );
});
