import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { CORE_TOOLS, PLAN_TOOLS } from '../src/index.js';
import {
  CLI,
  call,
  INITIALIZE_REQUEST,
  mnemo,
  mnemoJson,
  ok,
  onCleanup,
  tempDir,
} from './fixture.js';

/** Spawns the built `mnemo serve` over stdio, as an MCP client application would. */
async function spawnServer(args: readonly string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'serve', ...args],
    cwd: tempDir(),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'mnemo-stdio-test', version: '1.0.0' });
  await client.connect(transport);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await client.close();
  };
  onCleanup(close);
  return { client, close, stderr: () => stderr };
}

describe('mnemo serve over stdio (the built binary, spawned)', () => {
  it('answers every request already received when stdin ends, before closing the store', async () => {
    const db = join(tempDir(), 'piped.duckdb');
    const store = `duckdb:${db}`;
    const requests = [
      INITIALIZE_REQUEST,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      ...['one', 'two', 'three'].map((n, i) => ({
        jsonrpc: '2.0',
        id: i + 2,
        method: 'tools/call',
        params: { name: 'mnemo.remember', arguments: { content: `piped memory ${n}` } },
      })),
      {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'mnemo.recall', arguments: { query: 'piped' } },
      },
    ];
    const served = mnemo(['serve', '--agent', 'a', '--store', store], {
      input: `${requests.map((r) => JSON.stringify(r)).join('\n')}\n`,
    });
    expect(served.code).toBe(0);
    const answered = served.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; result?: { isError?: boolean } });
    expect(answered.map((answer) => [answer.id, answer.result?.isError ?? false])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, false],
      [5, false],
    ]);
    const exported = mnemo(['export', '--store', store]);
    expect(exported.stdout.trimEnd().split('\n')).toHaveLength(3);
  });

  it('answers a line that is not JSON-RPC with a parse error, as over HTTP, and goes on', () => {
    const store = `duckdb:${join(tempDir(), 'garbled.duckdb')}`;
    const lines = [
      JSON.stringify(INITIALIZE_REQUEST),
      '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"',
      JSON.stringify({ jsonrpc: '1.0', id: 3, method: 'tools/list' }),
      JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }),
    ];
    const served = mnemo(['serve', '--agent', 'a', '--store', store], {
      input: `${lines.join('\n')}\n`,
    });
    expect(served.code).toBe(0);
    const answered = served.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number | null; error?: unknown; result?: object });
    // A parse error is answered at once, a request once it ran: sorted by id, null last.
    const byId = answered
      .map(({ id, error, result }) => [id, error ?? Object.keys(result ?? {})] as const)
      .sort(([a], [b]) => (a ?? Number.POSITIVE_INFINITY) - (b ?? Number.POSITIVE_INFINITY) || 0);
    expect(byId).toEqual([
      [1, ['protocolVersion', 'capabilities', 'serverInfo', 'instructions']],
      [4, ['tools']],
      [null, { code: -32700, message: 'Parse error: Invalid JSON' }],
      [null, { code: -32700, message: 'Parse error: Invalid JSON-RPC message' }],
    ]);
  });

  it('serves the agent fixed by --agent, and leaves the store usable when the client closes', async () => {
    const db = join(tempDir(), 'memory.duckdb');
    const store = `duckdb:${db}`;
    mnemoJson([
      'remember',
      'agent b keeps a private note about owls',
      '--agent',
      'b',
      '--store',
      store,
    ]);

    const server = await spawnServer(['--transport', 'stdio', '--agent', 'a', '--store', store]);
    const { client } = server;
    expect(client.getServerVersion()).toEqual({ name: 'mnemo', version: expect.any(String) });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([...CORE_TOOLS]);
    const stored = await ok(client, 'mnemo.remember', {
      content: 'agent a saw two owls at dusk',
      tags: ['owls'],
    });
    expect(stored).toEqual({
      id: expect.any(String),
      content_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      deduplicated: false,
    });
    const found = await ok(client, 'mnemo.recall', { query: 'owls' });
    // Only a's own record: b's private note is invisible to this connection.
    expect(
      (found.hits as { record: { id: string; agent_id: string } }[]).map((hit) => hit.record),
    ).toEqual([expect.objectContaining({ id: stored.id, agent_id: 'a' })]);
    const rejected = await call(client, 'mnemo.recall', { query: 'owls', agent_id: 'b' });
    expect(rejected.isError).toBe(true);
    expect(rejected.text).toContain('Unrecognized key: "agent_id"');
    const failed = await call(client, 'mnemo.forget', { ids: ['no-such-id'] });
    expect(failed.body).toEqual({
      error: { code: 'NOT_FOUND', message: 'no record no-such-id visible to the caller' },
    });
    expect((await ok(client, 'mnemo.verify', {})).ok).toBe(true);
    await server.close();
    expect(server.stderr()).toContain(`mnemo: serving agent a over stdio, DuckDB ${db}`);

    // The server closed the DuckDB file: the CLI can open it, and a's record is there.
    const exported = mnemo(['export', '--store', store]);
    expect(exported.code).toBe(0);
    const records = exported.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line).record);
    expect(records.map((record) => [record.agentId, record.content])).toEqual([
      ['b', 'agent b keeps a private note about owls'],
      ['a', 'agent a saw two owls at dusk'],
    ]);
  });

  it('lists and runs the plan tools with --experience, and plans survive a restart', async () => {
    const store = `duckdb:${join(tempDir(), 'plans.duckdb')}`;
    const first = await spawnServer([
      '--agent',
      'planner',
      '--org',
      'acme',
      '--experience',
      '--store',
      store,
    ]);
    expect((await first.client.listTools()).tools.map((tool) => tool.name)).toEqual([
      ...CORE_TOOLS,
      ...PLAN_TOOLS,
    ]);
    const cached = await ok(first.client, 'mnemo.remember_plan', {
      query: 'which birds nest near water',
      steps: ['recall birds water'],
      chunk_ids: ['r1'],
      outcome_score: 0.75,
    });
    expect(cached).toMatchObject({ stored: true, status: 'plan_cached' });
    await first.close();

    const second = await spawnServer([
      '--agent',
      'planner',
      '--org',
      'acme',
      '--experience',
      '--store',
      store,
    ]);
    expect(
      await ok(second.client, 'mnemo.recall_plan', { query: 'Which birds nest near water?' }),
    ).toEqual({
      plan: {
        id: cached.id,
        query: 'which birds nest near water',
        steps: ['recall birds water'],
        chunk_ids: ['r1'],
        outcome_score: 0.75,
        similarity: 1,
      },
      candidates_considered: 1,
      hit: true,
    });
    await second.close();
    expect(mnemoJson(['plans', '--store', store]).plans).toEqual([
      expect.objectContaining({ id: cached.id, owner: 'acme/planner', replays: 1 }),
    ]);
  });

  it('closes the store and exits 0 when its client stops reading, once the calls under way are done', async () => {
    const db = join(tempDir(), 'gone.duckdb');
    const server = spawn(
      process.execPath,
      [CLI, 'serve', '--agent', 'a', '--store', `duckdb:${db}`],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((done) => server.once('exit', (code) => done(code)));
    onCleanup(() => server.kill('SIGKILL'));
    server.stdin.write(`${JSON.stringify(INITIALIZE_REQUEST)}\n`);
    await new Promise((answered) => server.stdout.once('data', answered));
    // The client goes away without ending stdin: the answer to this call meets a closed pipe.
    server.stdout.destroy();
    const remember = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'mnemo.remember', arguments: { content: 'remembered for a client gone' } },
    };
    server.stdin.write(`${JSON.stringify(remember)}\n`);
    expect(await exited).toBe(0);
    // Closed cleanly: everything is in the database file.
    expect([existsSync(`${db}.wal`), existsSync(`${db}.mnemo-journal`)]).toEqual([false, false]);
    const exported = mnemo(['export', '--store', `duckdb:${db}`]);
    expect(
      exported.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line).record.content),
    ).toEqual(['remembered for a client gone']);
  });

  it('exits 0 when its client closes stdin', () => {
    const store = `duckdb:${join(tempDir(), 'eof.duckdb')}`;
    const result = mnemo(['serve', '--agent', 'a', '--store', store], { input: '' });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
  });
});
