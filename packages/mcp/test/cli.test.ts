import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngine, exportToJson } from '@mnemo/core';
import { createManualClock, memoryRecord } from '@mnemo/core/testing';
import { rememberPlan, reportPlanOutcome } from '@mnemo/experience';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { describe, expect, it } from 'vitest';
import { parseStoreSpec, redactSecrets } from '../src/cli/store-spec.js';
import { VERSION } from '../src/index.js';
import { CLI, mnemo, mnemoJson, START, tempDir } from './fixture.js';
import { fillRichStore } from './rich-store.js';

const HASH = /^[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the mnemo CLI (the built binary)', () => {
  it('prints usage, its version, and refuses unknown commands', () => {
    const help = mnemo(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: mnemo <command> \[options\]\n/);
    for (const command of [
      'serve',
      'remember',
      'recall',
      'plans',
      'audit verify',
      'export',
      'import',
      'purge-expired',
    ]) {
      expect(help.stdout).toContain(`\n  ${command}`);
      const own = mnemo([...command.split(' '), '--help']);
      expect(own.code).toBe(0);
      expect(own.stdout).toMatch(new RegExp(`^Usage: mnemo ${command}`));
    }
    expect(mnemo([]).code).toBe(2);
    expect(mnemo(['--version']).stdout).toBe(`${VERSION}\n`);
    const unknown = mnemo(['forgetall']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^mnemo: unknown command 'forgetall'\n/);
  });

  it('remembers and recalls as --agent, in the default ./mnemo.duckdb', () => {
    const cwd = tempDir();
    const first = mnemoJson(
      [
        'remember',
        'The heron nests by the north pond',
        '--agent',
        'a',
        '--type',
        'semantic',
        '--scope',
        'public',
        '--importance',
        '0.8',
        '--tag',
        'birds',
        '--tag',
        'pond',
        '--metadata',
        '{"seen":2}',
        '--thread',
        'walk-1',
        '--source',
        'note',
        '--expires-at',
        '2099-01-01T00:00:00Z',
      ],
      { cwd },
    );
    expect(first).toEqual({
      id: expect.stringMatching(UUID),
      content_hash: expect.stringMatching(HASH),
      deduplicated: false,
    });
    const again = mnemo(
      ['remember', 'The heron nests by the north pond', '--agent', 'a', '--scope', 'public'],
      { cwd },
    );
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(
      `id            ${first.id}\ncontent hash  ${first.content_hash}\ndeduplicated  yes (an identical live memory exists)\n`,
    );
    mnemoJson(['remember', 'b keeps a private note on the heron', '--agent', 'b'], { cwd });

    const found = mnemoJson(
      ['recall', 'heron', '--agent', 'a', '--tag', 'birds', '--min-importance', '0.5'],
      { cwd },
    );
    expect(found).toEqual({
      strategy: 'lexical',
      hits: [
        {
          record: {
            id: first.id,
            agent_id: 'a',
            org_id: null,
            content: 'The heron nests by the north pond',
            memory_type: 'semantic',
            scope: 'public',
            importance: 0.8,
            tags: ['birds', 'pond'],
            metadata: { seen: 2 },
            content_hash: first.content_hash,
            thread_id: 'walk-1',
            source_type: 'note',
            created_at: expect.any(String),
            updated_at: expect.any(String),
            expires_at: '2099-01-01T00:00:00.000Z',
            deleted_at: null,
            access_count: 0,
            last_accessed_at: null,
          },
          score: expect.any(Number),
        },
      ],
    });
    // b sees a's public record and its own private one; a does not see b's.
    const byB = mnemoJson(['recall', 'heron', '--agent', 'b'], { cwd });
    expect(
      (byB.hits as { record: { agent_id: string } }[]).map((hit) => hit.record.agent_id).sort(),
    ).toEqual(['a', 'b']);
    const byA = mnemoJson(['recall', 'heron', '--agent', 'a'], { cwd });
    expect((byA.hits as unknown[]).length).toBe(1);

    const table = mnemo(['recall', 'heron pond', '--agent', 'a'], { cwd });
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^score {2}id {36}type {6}scope {3}created {15}content$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^\\d\\.\\d{3}  ${first.id}  semantic  public  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ  The heron nests by the north pond$`,
      ),
    );
    expect(lines).toHaveLength(2);
    // --explain adds each lane's rank and score.
    const explained = mnemo(['recall', 'heron pond', '--agent', 'a', '--explain'], { cwd });
    const [head, row] = explained.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^score {2}id {36}type {6}scope {3}created {15}lanes {13}content$/);
    const score = row?.slice(0, 5);
    expect(row?.endsWith(`  lexical #1 ${score}  The heron nests by the north pond`)).toBe(true);
    expect(mnemo(['recall', 'zebra', '--agent', 'a'], { cwd }).stdout).toBe(
      'no memories matched (lexical recall)\n',
    );
  });

  it('reports bad usage and bad input with exit code 2, and runtime failures with 1', () => {
    const cwd = tempDir();
    const cases: [string[], string][] = [
      [['remember', 'text'], 'mnemo: remember: --agent is required\n'],
      [['remember', '--agent', 'a'], 'mnemo: remember: give the content\n'],
      [
        ['remember', 'one', 'two', '--agent', 'a'],
        'mnemo: remember: expected one content argument, got 2 (quote text with spaces)\n',
      ],
      [
        ['remember', 'x', '--agent', 'a', '--importance', '2'],
        "mnemo: --importance must be a number from 0 to 1, got '2'\n",
      ],
      [
        ['remember', 'x', '--agent', 'a', '--scope', 'team'],
        "mnemo: --scope must be one of private, shared, public, global, got 'team'\n",
      ],
      [
        ['remember', 'x', '--agent', 'a', '--metadata', '[1]'],
        `mnemo: --metadata must be a JSON object, e.g. '{"source":"chat"}'\n`,
      ],
      ...[
        'soon',
        '2030',
        '2030-01-31 12:00',
        '2030-01-31T12:00',
        '2030-02-31',
        '2030-04-31T00:00Z',
      ].map((date): [string[], string] => [
        ['remember', 'x', '--agent', 'a', '--expires-at', date],
        `mnemo: --expires-at must be an ISO 8601 date (2030-01-31) or date and time with its offset (2030-01-31T12:00:00Z), got '${date}'\n`,
      ]),
      [['remember', 'x', '--agent', 'a', '--bogus'], "mnemo: remember: Unknown option '--bogus'\n"],
      [
        ['remember', 'x', '--agent', 'a', '--store', 'sqlite:x.db'],
        "mnemo: --store: unknown store 'sqlite' (expected duckdb:<file> or postgres:<url>)\n",
      ],
      [
        ['remember', 'x', '--agent', 'a', '--store', ':x.db'],
        "mnemo: --store must be duckdb:<file> or postgres:<url>, got ':x.db'\n",
      ],
      [
        ['remember', 'x', '--agent', 'a', '--store', 'postgres:not-a-url'],
        'mnemo: --store postgres:<url> needs a postgres:// URL, e.g. postgres:postgres://user:password@127.0.0.1:5432/db\n',
      ],
      [
        ['recall', 'x', '--agent', 'a', '--limit', '101'],
        "mnemo: --limit must be an integer from 1 to 100, got '101'\n",
      ],
      [
        ['serve', '--transport', 'stdio'],
        'mnemo: serve: --agent <id> is required over stdio (the identity of the connection)\n',
      ],
      [
        ['serve', '--transport', 'http'],
        'mnemo: serve: --tokens <file> is required over HTTP (tokens and their agents)\n',
      ],
      [
        ['serve', '--transport', 'http', '--agent', 'a'],
        'mnemo: serve: --agent is for --transport stdio; over HTTP each token names its agent\n',
      ],
      [
        ['serve', '--transport', 'http', '--tokens', 't.json', '--host', '0.0.0.0'],
        'mnemo: serve: --host 0.0.0.0 is not a loopback address; add --allow-remote to listen on it (put TLS in front)\n',
      ],
      [
        ['serve', '--transport', 'http', '--tokens', 'missing.json'],
        'mnemo: serve: tokens file missing.json: cannot be read\n',
      ],
      [
        ['serve', '--agent', 'a', '--tokens', 't.json'],
        'mnemo: serve: --tokens is for --transport http',
      ],
      // Checked before the store is opened, like --agent.
      [
        ['serve', '--agent', 'a', '--org', 'an org'],
        'mnemo: serve: --org must be 1-256 characters of A-Z a-z 0-9 . _ -',
      ],
      [
        ['serve', '--transport', 'tcp'],
        "mnemo: --transport must be one of stdio, http, got 'tcp'\n",
      ],
      [['import', '--in', 'missing.ndjson'], 'mnemo: --in missing.ndjson: no such file\n'],
      [['import', '--in', '.'], 'mnemo: --in .: is a directory, not a file\n'],
    ];
    for (const [args, message] of cases) {
      const result = mnemo(args, { cwd });
      expect([args, result.code, result.stderr.split('\n')[0]]).toEqual([
        args,
        2,
        message.trimEnd(),
      ]);
      expect(result.stderr).toMatch(/\nRun 'mnemo [a-z ]+ --help' for usage\.\n$/);
    }
    // The engine's own validation: bad input too, named by the argument that carried it (and
    // by the engine's field when that says which of them: a repeated flag, a nested value).
    const long = 'x'.repeat(257);
    const refused: [string[], string][] = [
      [['remember', '   ', '--agent', 'a'], '<content>: must not be blank'],
      [
        ['remember', 'x', '--agent', 'a', '--tag', '__experience_plan__'],
        '--tag: tag "__experience_plan__" is reserved',
      ],
      [
        ['remember', 'x', '--agent', 'a', '--tag', 'ok', '--tag', ' '],
        '--tag (tags[1]): must not be blank',
      ],
      [
        ['remember', 'x', '--agent', 'a', '--expires-at', '2020-01-01'],
        '--expires-at: must be in the future',
      ],
      [
        ['remember', 'x', '--agent', 'a', '--thread', long],
        '--thread: must be at most 256 characters',
      ],
      [
        ['remember', 'x', '--agent', 'a', '--source', long],
        '--source: must be at most 256 characters',
      ],
      [
        ['remember', 'x', '--agent', 'a', '--metadata', '{"a":{"b":"\\u0000"}}'],
        '--metadata (metadata.a.b): contains a NUL character',
      ],
      [['recall', '   ', '--agent', 'a'], '<query>: must not be blank'],
      [
        ['recall', 'x', '--agent', 'a', '--tag', ' '],
        '--tag (filters.tagsAny[0]): must not be blank',
      ],
      [
        ['recall', 'x', '--agent', 'a', '--tag-all', ' '],
        '--tag-all (filters.tagsAll[0]): must not be blank',
      ],
      [
        ['recall', 'x', '--agent', 'a', '--thread', long],
        '--thread: must be at most 256 characters',
      ],
    ];
    for (const [args, message] of refused) {
      const result = mnemo(args, { cwd });
      expect([args, result.code, result.stderr]).toEqual([
        args,
        2,
        `mnemo: INVALID_INPUT: ${message}\n`,
      ]);
    }
    // The ends of a range are inside it.
    const heaviest = mnemo(['remember', 'x', '--agent', 'a', '--importance', '1'], { cwd });
    const widest = mnemo(['recall', 'x', '--agent', 'a', '--limit', '100'], { cwd });
    expect([heaviest.code, heaviest.stderr, widest.code, widest.stderr]).toEqual([0, '', 0, '']);
    const badAgent = mnemo(
      ['remember', 'x', '--agent', 'a b', '--store', `duckdb:${join(cwd, 'm.duckdb')}`],
      { cwd },
    );
    expect([badAgent.code, badAgent.stderr.split('\n')[0]]).toEqual([
      2,
      'mnemo: remember: --agent must be 1-256 characters of A-Z a-z 0-9 . _ -',
    ]);
    // Reading a store that does not exist creates nothing: exit 1.
    const missing = mnemo(['recall', 'x', '--agent', 'a', '--store', 'duckdb:nowhere.duckdb'], {
      cwd,
    });
    expect([missing.code, missing.stderr]).toEqual([
      1,
      'mnemo: NOT_FOUND: no database at nowhere.duckdb; name one with --store duckdb:<file> or --store postgres:<url>\n',
    ]);
    // An unreachable PostgreSQL server is a store error; the password never shows.
    const down = mnemo(['plans', '--store', 'postgres:postgres://u:s3cret-pw@127.0.0.1:1/db'], {
      cwd,
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^mnemo: STORE_UNAVAILABLE: /);
    expect(down.stderr).not.toContain('s3cret-pw');
  });

  it('fails writing its output with one line and no stack trace', () => {
    const cwd = tempDir();
    const store = `duckdb:${join(cwd, 'out.duckdb')}`;
    mnemoJson(['remember', 'a note to export', '--agent', 'a', '--store', store]);
    // A folder that does not exist: one line, exit 1, no partial file left behind.
    const missing = mnemo(['export', '--store', store, '--out', join(cwd, 'nodir', 'x.ndjson')], {
      cwd,
    });
    expect([missing.code, missing.stderr.split('\n').length]).toEqual([1, 2]);
    expect(missing.stderr).toMatch(/^mnemo: cannot write .*x\.ndjson.*ENOENT/);
    // A reader that stops early (`| head -1`): a quiet exit, no stack.
    for (const args of [['--help'], ['export', '--store', store]]) {
      const piped = spawnSync(
        'bash',
        ['-c', `"${process.execPath}" "${CLI}" ${args.map((a) => `'${a}'`).join(' ')} | true`],
        { cwd, encoding: 'utf8' },
      );
      expect([args, piped.stderr]).toEqual([args, '']);
    }
    // A full disk: one line, exit 1.
    const full = spawnSync(
      'bash',
      ['-c', `"${process.execPath}" "${CLI}" export --store '${store}' > /dev/full`],
      { cwd, encoding: 'utf8' },
    );
    expect([full.status, full.stderr.split('\n').length]).toEqual([1, 2]);
    expect(full.stderr).toMatch(/^mnemo: .*ENOSPC/);
  });

  it('shows control characters of a memory escaped, so it cannot drive the terminal', () => {
    const cwd = tempDir();
    const store = `duckdb:${join(cwd, 'escape.duckdb')}`;
    mnemoJson([
      'remember',
      'owls \u001b]0;pwned\u0007\u001b[2K at dusk',
      '--agent',
      'a',
      '--store',
      store,
    ]);
    const shown = mnemo(['recall', 'owls', '--agent', 'a', '--store', store], { cwd });
    expect(shown.code).toBe(0);
    // No control character but the line ends.
    const controls = [...shown.stdout].filter((c) => c < ' ' && c !== '\n');
    expect(controls).toEqual([]);
    expect(shown.stdout).toContain('owls \\x1b]0;pwned\\x07\\x1b[2K at dusk');
  });

  it('lists cached plans with outcome and replay counts', async () => {
    const dir = tempDir();
    const file = join(dir, 'plans.duckdb');
    const { plans } = await fillRichStore(createDuckDBStore({ path: file }));
    const listing = mnemoJson(['plans', '--store', `duckdb:${file}`]);
    expect(listing).toEqual({
      plans: [
        {
          id: plans[0],
          owner: 'acme/agent-a',
          scope: 'public',
          query: 'when do herons hunt',
          outcome_score: 0.8,
          running_outcome: 0.8,
          outcomes_reported: 0,
          failures: 0,
          retired: false,
          steps: 2,
          chunk_ids: 1,
          replays: 2,
          created_at: '2026-01-01T00:00:01.000Z',
          deleted_at: null,
          expires_at: null,
        },
        {
          id: plans[1],
          owner: 'acme/agent-b',
          scope: 'private',
          query: 'where does the kestrel hover',
          outcome_score: 1,
          running_outcome: 1,
          outcomes_reported: 0,
          failures: 0,
          retired: false,
          steps: 1,
          chunk_ids: 0,
          replays: 0,
          created_at: '2026-01-01T00:00:01.000Z',
          deleted_at: null,
          expires_at: null,
        },
      ],
    });
    const table = mnemo(['plans', '--store', `duckdb:${file}`]);
    expect(table.stdout.split('\n').slice(0, 2)).toEqual([
      `id${' '.repeat(plans[0]?.length ?? 0)}owner         scope    outcome  replays  created               query`,
      `${plans[0]}  acme/agent-a  public      0.80        2  2026-01-01 00:00:01Z  when do herons hunt`,
    ]);
    const empty = join(dir, 'empty.duckdb');
    mnemoJson(['remember', 'no plans here', '--agent', 'a', '--store', `duckdb:${empty}`]);
    expect(mnemo(['plans', '--store', `duckdb:${empty}`]).stdout).toBe('no cached plans\n');
  });

  it('lists a plan with its reported outcomes, and as retired once they brought it below 0.5', async () => {
    const { file, engine, planner } = await plannerStore('retired.duckdb');
    const plan = { steps: ['recall'], chunkIds: [], outcomeScore: 0.8 };
    const retired = await rememberPlan(planner, { query: 'how are deploys done', ...plan });
    const kept = await rememberPlan(planner, { query: 'where do owls sleep', ...plan });
    for (const score of [0, 0]) {
      await reportPlanOutcome(planner, { planId: retired.id as string, outcomeScore: score });
    }
    await reportPlanOutcome(planner, { planId: kept.id as string, outcomeScore: 0.4 });
    await engine.close();
    const store = `duckdb:${file}`;
    const listed = (mnemoJson(['plans', '--store', store]).plans as Record<string, unknown>[]).map(
      (p) => [p.id, p.outcome_score, p.running_outcome, p.outcomes_reported, p.failures, p.retired],
    );
    expect(listed).toEqual([
      [retired.id, 0.8, 0.2, 2, 2, true],
      [kept.id, 0.8, 0.6000000000000001, 1, 1, false],
    ]);
    const table = mnemo(['plans', '--store', store]).stdout.split('\n');
    expect(table.slice(1, 3).map((line) => line.split(/ {2,}/).slice(0, 4))).toEqual([
      [`${retired.id} (retired)`, 'planner', 'private', '0.20'],
      [kept.id, 'planner', 'private', '0.60'],
    ]);
  });

  it('lists an expired plan, which is never replayed again, as forgotten: only with --all', async () => {
    const { file, engine, planner } = await plannerStore('expired.duckdb');
    const plan = { steps: ['recall'], chunkIds: [], outcomeScore: 0.9 };
    const expired = await rememberPlan(planner, {
      query: 'when do herons hunt',
      ttlMs: 60_000,
      ...plan,
    });
    const kept = await rememberPlan(planner, { query: 'where do owls sleep', ...plan });
    await engine.close();
    const store = `duckdb:${file}`;
    const listing = (args: string[]) =>
      (mnemoJson(['plans', ...args, '--store', store]).plans as Record<string, unknown>[]).map(
        (listed) => [listed.id, listed.deleted_at, listed.expires_at],
      );
    expect(listing([])).toEqual([[kept.id, null, null]]);
    expect(listing(['--all'])).toEqual([
      [expired.id, null, '2020-01-01T00:01:00.000Z'],
      [kept.id, null, null],
    ]);
    const table = mnemo(['plans', '--all', '--store', store]).stdout.split('\n');
    expect(table[1]?.startsWith(`${expired.id} (expired)  planner`)).toBe(true);
  });

  it('verifies the audit log, and detects a truncated chain from known heads (exit 3)', () => {
    const cwd = tempDir();
    mnemoJson(['remember', 'one', '--agent', 'a'], { cwd });
    mnemoJson(['remember', 'two', '--agent', 'b', '--org', 'acme'], { cwd });
    const verified = mnemo(['audit', 'verify'], { cwd });
    expect([verified.code, verified.stdout]).toEqual([0, 'audit ok: 2 events in 2 chains\n']);
    const report = mnemoJson(['audit', 'verify'], { cwd });
    expect(report).toEqual({
      ok: true,
      events: 2,
      chains: 2,
      problems: [],
      heads: [
        { chain: 'a', seq: 1, hash: expect.stringMatching(HASH) },
        { chain: 'acme/b', seq: 1, hash: expect.stringMatching(HASH) },
      ],
    });
    writeFileSync(join(cwd, 'heads.json'), JSON.stringify(report));
    expect(mnemo(['audit', 'verify', '--known-heads', 'heads.json'], { cwd }).code).toBe(0);

    const forged = [{ chain: 'a', seq: 5, hash: 'f'.repeat(64) }];
    writeFileSync(join(cwd, 'forged.json'), JSON.stringify(forged));
    const truncated = mnemo(['audit', 'verify', '--known-heads', 'forged.json'], { cwd });
    expect(truncated.code).toBe(3);
    expect(truncated.stdout).toBe(
      'audit FAILED: 1 of 2 events in 2 chains failed\n' +
        'chain  seq  problem    message\n' +
        'a        2  truncated  chain a no longer reaches the known head at seq 5\n',
    );
    writeFileSync(join(cwd, 'junk.json'), '{"heads": 3}');
    expect(mnemo(['audit', 'verify', '--known-heads', 'junk.json'], { cwd }).code).toBe(2);
    writeFileSync(join(cwd, 'zero.json'), JSON.stringify([{ ...forged[0], seq: 0 }]));
    const zero = mnemo(['audit', 'verify', '--known-heads', 'zero.json'], { cwd });
    expect([zero.code, zero.stderr]).toEqual([
      2,
      'mnemo: INVALID_INPUT: --known-heads (knownHeads[0]): must be { chain: string, seq: integer ≥ 1, hash: string }\n',
    ]);
    // A file that cannot be read is not said to be bad JSON.
    writeFileSync(join(cwd, 'bad.json'), '[{');
    for (const [path, problem] of [
      ['missing.json', 'no such file'],
      ['.', 'cannot be read (EISDIR)'],
      ['bad.json', 'is not valid JSON'],
    ]) {
      const run = mnemo(['audit', 'verify', '--known-heads', path as string], { cwd });
      expect([run.code, run.stderr]).toEqual([
        2,
        `mnemo: --known-heads ${path}: ${problem}\nRun 'mnemo audit verify --help' for usage.\n`,
      ]);
    }
  });

  it('with --records, checks every record against its hash and the log (exit 3 on a tampered one)', async () => {
    const cwd = tempDir();
    const { id } = mnemoJson(['remember', 'one', '--agent', 'a'], { cwd }) as { id: string };
    mnemoJson(['remember', 'two', '--agent', 'b'], { cwd });
    expect(mnemo(['audit', 'verify', '--records'], { cwd }).stdout).toBe(
      'audit ok: 2 events in 2 chains\nrecords ok: 2 records\n',
    );
    // Erase a record through the store, behind the engine's back: no forget event says so.
    const store = createDuckDBStore({ path: join(cwd, 'mnemo.duckdb') });
    await store.init();
    await store.transaction((tx) => tx.redactRecords([id], '[redacted]', new Date()));
    await store.close();
    const tampered = mnemo(['audit', 'verify', '--records'], { cwd });
    expect([tampered.code, tampered.stdout]).toEqual([
      3,
      'audit ok: 2 events in 2 chains\n' +
        'records FAILED: 1 problem in 2 records\n' +
        `position  record${' '.repeat(id.length - 6)}  problem        message\n` +
        `       1  ${id}  hash_mismatch  record ${id} does not match its content hash\n`,
    ]);
    const report = mnemo(['audit', 'verify', '--records', '--json'], { cwd });
    expect([report.code, JSON.parse(report.stdout)]).toMatchObject([
      3,
      {
        ok: true,
        records: {
          ok: false,
          records: 2,
          problems: [{ kind: 'hash_mismatch', record_id: id, position: 1 }],
        },
      },
    ]);
  });

  it('purges expired records for good, audited, and leaves the others', async () => {
    const cwd = tempDir();
    // Written with a clock of the past: the first record has expired by now.
    const store = createDuckDBStore({ path: join(cwd, 'mnemo.duckdb') });
    const engine = createEngine({ store, clock: createManualClock(START) });
    await engine.init();
    const agent = engine.as('a');
    await agent.remember({
      content: 'expired long ago',
      expiresAt: new Date(Date.parse(START) + 60_000),
    });
    const { id: kept } = await agent.remember({ content: 'kept' });
    await engine.close();
    expect(mnemo(['purge-expired'], { cwd }).stdout).toBe('purged 1 expired record\n');
    expect(mnemoJson(['purge-expired', '--json'], { cwd })).toEqual({ purged: 0 });
    expect(mnemo(['audit', 'verify', '--records'], { cwd }).stdout).toBe(
      'audit ok: 3 events in 1 chain\nrecords ok: 1 record\n',
    );
    const exported = mnemo(['export'], { cwd }).stdout.trim().split('\n');
    expect(exported.map((line) => JSON.parse(line).record.id)).toEqual([kept]);
  });

  it('exports and imports every record: an empty store gets identical records and a passing audit', async () => {
    const dir = tempDir();
    const source = `duckdb:${join(dir, 'source.duckdb')}`;
    await fillRichStore(createDuckDBStore({ path: join(dir, 'source.duckdb') }));
    const exported = mnemo(['export', '--store', source, '--out', join(dir, 'dump.ndjson')]);
    expect([exported.code, exported.stdout, exported.stderr]).toEqual([
      0,
      '',
      `exported 8 records to ${join(dir, 'dump.ndjson')}\n`,
    ]);
    const dump = readFileSync(join(dir, 'dump.ndjson'), 'utf8');
    expect(mnemo(['export', '--store', source]).stdout).toBe(dump);
    const lines = dump
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(8);
    const records = lines.map((line) => line.record);
    // The export carries what a faithful copy needs.
    expect(
      records.every((record) => record.embedding === null || record.embedding.length === 16),
    ).toBe(true);
    expect(records.filter((record) => record.embedding !== null).length).toBeGreaterThan(0);
    expect(
      records.filter((record) => record.deletedAt !== null).map((record) => record.content),
    ).toEqual(['c forgets this softly', '[redacted]']);
    expect(records.some((record) => record.accessCount > 0 && record.lastAccessedAt !== null)).toBe(
      true,
    );
    expect(records.some((record) => record.expiresAt !== null)).toBe(true);
    expect(
      lines
        .flatMap((line) => line.grants)
        .map((grant) => [grant.granteeAgentId, grant.permission, grant.expiresAt]),
    ).toEqual([
      ['agent-b', 'write', null],
      ['agent-d', 'read', '2026-01-01T01:00:00.000Z'],
    ]);
    expect(records.filter((record) => record.tags.includes('__experience_plan__'))).toHaveLength(2);

    // Into an empty DuckDB file from --in, and into another from stdin.
    const copy = `duckdb:${join(dir, 'copy.duckdb')}`;
    expect(mnemoJson(['import', '--in', join(dir, 'dump.ndjson'), '--store', copy])).toEqual({
      imported: 8,
      skipped: 0,
    });
    const piped = `duckdb:${join(dir, 'piped.duckdb')}`;
    const fromStdin = mnemo(['import', '--store', piped], { input: dump });
    expect([fromStdin.code, fromStdin.stdout]).toEqual([
      0,
      'imported 8 records, skipped 0 already present\n',
    ]);
    for (const store of [copy, piped]) {
      expect(mnemo(['export', '--store', store]).stdout).toBe(dump);
      const audit = mnemoJson(['audit', 'verify', '--store', store]);
      expect(audit).toMatchObject({ ok: true, problems: [] });
      // One import event per record, in its owner's chain.
      expect(audit.events).toBe(8);
    }
    // Again: everything is already there.
    expect(mnemoJson(['import', '--in', join(dir, 'dump.ndjson'), '--store', copy])).toEqual({
      imported: 0,
      skipped: 8,
    });
    // The copy works as a store: recall sees the imported records with their visibility.
    const hits = mnemoJson([
      'recall',
      'herons',
      '--agent',
      'agent-b',
      '--org',
      'acme',
      '--store',
      copy,
    ]).hits as {
      record: { content: string; created_at: string };
    }[];
    expect(hits.map((hit) => hit.record.content)).toEqual([
      'The shared field guide: herons hunt at dawn',
    ]);
    expect(hits[0]?.record.created_at).toBe(START);
    expect(mnemo(['export', '--store', source, '--out', join(dir, 'dump.ndjson')]).stderr).toBe(
      `mnemo: --out ${join(dir, 'dump.ndjson')} exists; name a new file\nRun 'mnemo export --help' for usage.\n`,
    );
  });

  it('imports nothing from input with a bad line, and names the line', async () => {
    const dir = tempDir();
    await fillRichStore(createDuckDBStore({ path: join(dir, 'source.duckdb') }));
    const dump = mnemo(['export', '--store', `duckdb:${join(dir, 'source.duckdb')}`]).stdout;
    const lines = dump.trimEnd().split('\n');
    const target = `duckdb:${join(dir, 'target.duckdb')}`;

    const notJson = [...lines.slice(0, 3), '{oops', ...lines.slice(3)].join('\n');
    const badJson = mnemo(['import', '--store', target], { input: notJson });
    expect([badJson.code, badJson.stderr]).toEqual([
      2,
      'mnemo: INVALID_INPUT: line 4: is not valid JSON\n',
    ]);

    const tampered = JSON.parse(lines[5] as string);
    tampered.record.content = 'tampered content';
    const withTamper = [...lines.slice(0, 5), JSON.stringify(tampered), ...lines.slice(6)].join(
      '\n',
    );
    writeFileSync(join(dir, 'tampered.ndjson'), withTamper);
    const badHash = mnemo(['import', '--in', join(dir, 'tampered.ndjson'), '--store', target]);
    expect([badHash.code, badHash.stderr]).toEqual([
      2,
      `mnemo: INVALID_INPUT: line 6.record.contentHash: does not match the record's fields (record ${tampered.record.id})\n`,
    ]);
    const wrongFormat = mnemo(['import', '--store', target], { input: '{"format":"other"}\n' });
    expect(wrongFormat.stderr).toBe(
      'mnemo: INVALID_INPUT: line 1.format: must be "mnemo.record.v1"\n',
    );
    // A record id repeated by a later line, from a file and from stdin: named by its line.
    const repeated = [...lines, lines[0]].join('\n');
    writeFileSync(join(dir, 'repeated.ndjson'), repeated);
    const firstId = JSON.parse(lines[0] as string).record.id;
    for (const run of [
      () => mnemo(['import', '--in', join(dir, 'repeated.ndjson'), '--store', target]),
      () => mnemo(['import', '--store', target], { input: repeated }),
    ]) {
      const result = run();
      expect([result.code, result.stderr]).toEqual([
        2,
        `mnemo: INVALID_INPUT: line ${lines.length + 1}: record ${firstId} repeats line 1\n`,
      ]);
    }
    // Nothing was written by any of them.
    expect(mnemo(['export', '--store', target]).stdout).toBe('');
  });

  it('imports nothing when embedding sizes differ between lines or from the store', async () => {
    const dir = tempDir();
    const record = (id: string, embedding: number[] | null) =>
      JSON.stringify(
        exportToJson({
          record: memoryRecord({
            id,
            content: `record ${id}`,
            embedding: embedding === null ? null : Float32Array.from(embedding),
          }),
          grants: [],
        }),
      );
    // Records without embeddings first: more than a chunk, which used to be written.
    const plain = Array.from({ length: 600 }, (_, i) =>
      record(`p-${String(i).padStart(4, '0')}`, null),
    );
    const mixed = [...plain, record('v-1', [1, 0, 0]), record('v-2', [1, 0, 0, 0])].join('\n');
    writeFileSync(join(dir, 'mixed.ndjson'), mixed);
    const target = `duckdb:${join(dir, 'target.duckdb')}`;
    for (const run of [
      () => mnemo(['import', '--in', join(dir, 'mixed.ndjson'), '--store', target]),
      () => mnemo(['import', '--store', target], { input: mixed }),
    ]) {
      const result = run();
      expect([result.code, result.stderr]).toEqual([
        2,
        'mnemo: INVALID_INPUT: line 602: a 4-dimensional embedding, where line 601 has 3 dimensions\n',
      ]);
    }
    // A store whose embeddings have another size than the input's: refused before writing.
    mnemoJson(['import', '--store', target], { input: record('w-1', [1, 0]) });
    const other = [...plain, record('v-3', [1, 0, 0])].join('\n');
    const result = mnemo(['import', '--store', target], { input: other });
    expect([result.code, result.stderr]).toEqual([
      1,
      'mnemo: DIMENSION_MISMATCH: line 601: a 3-dimensional embedding, but the store holds 2-dimensional ones\n',
    ]);
    expect(mnemo(['export', '--store', target]).stdout.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('redactSecrets', () => {
  it('masks a PostgreSQL password of 4 characters or more wherever a message quotes it', () => {
    const spec = parseStoreSpec('postgres://u:pw12@127.0.0.1:5432/db', undefined);
    expect(redactSecrets('password authentication failed: pw12', spec)).toBe(
      'password authentication failed: ***',
    );
    // Shorter ones are left: masking them would garble messages more than it hides.
    const short = parseStoreSpec('postgres://u:pw1@127.0.0.1:5432/db', undefined);
    expect(redactSecrets('pw1 failed', short)).toBe('pw1 failed');
  });
});

/** A DuckDB file with experience memory on, and a handle of `planner` to cache plans in it. */
async function plannerStore(name: string) {
  const file = join(tempDir(), name);
  const engine = createEngine({
    store: createDuckDBStore({ path: file }),
    clock: createManualClock('2020-01-01T00:00:00.000Z'),
    experienceMemory: true,
  });
  await engine.init();
  return { file, engine, planner: engine.as('planner') };
}
