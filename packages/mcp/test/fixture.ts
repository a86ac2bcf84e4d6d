import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createEngine, type Engine, type MemoryStore } from '@mnemo/core';
import { createManualClock, createSequentialIds, type ManualClock } from '@mnemo/core/testing';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, afterEach, expect } from 'vitest';
import { createMcpServer, type McpServerOptions } from '../src/index.js';

/** The built CLI (vitest's global setup runs `tsc -b` first). */
export const CLI = resolve(import.meta.dirname, '../dist/cli.js');

export const START = '2026-01-01T00:00:00.000Z';

/** A client's first JSON-RPC request, for tests that speak the protocol by hand. */
export const INITIALIZE_REQUEST = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Runs `step` after the current test. */
export function onCleanup(step: () => Promise<unknown> | unknown): void {
  cleanup.push(step);
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed after the file's tests. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-mcp-'));
  dirs.push(dir);
  return dir;
}

export interface TestEngine {
  engine: Engine;
  store: MemoryStore;
  clock: ManualClock;
}

/** An engine on an in-memory DuckDB store with a manual clock and sequential ids. */
export async function openEngine(
  options: { experienceMemory?: boolean; store?: MemoryStore } = {},
): Promise<TestEngine> {
  const store = options.store ?? createDuckDBStore({ path: ':memory:' });
  const clock = createManualClock(START);
  const engine = createEngine({
    store,
    clock,
    ids: createSequentialIds(),
    experienceMemory: options.experienceMemory ?? false,
  });
  await engine.init();
  onCleanup(() => engine.close());
  return { engine, store, clock };
}

/** An SDK client talking to `createMcpServer(options)` in this process. */
export async function connect(options: McpServerOptions): Promise<Client> {
  const server = createMcpServer(options);
  const client = new Client({ name: 'mnemo-test', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(clientSide), server.connect(serverSide)]);
  onCleanup(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

export interface ToolCall {
  isError: boolean;
  /** The text content parsed as JSON. */
  body: Record<string, unknown>;
  /** The raw text content. */
  text: string;
  structured: Record<string, unknown> | undefined;
}

/** Calls a tool; the result's single text content is parsed (or kept raw when not JSON). */
export async function call(client: Client, name: string, args: object): Promise<ToolCall> {
  const result = await client.callTool({ name, arguments: args as Record<string, unknown> });
  const content = result.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]?.type).toBe('text');
  const text = content[0]?.text as string;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = {};
  }
  const isError = result.isError === true;
  if (!isError) expect(result.structuredContent).toEqual(body);
  return {
    isError,
    body,
    text,
    structured: result.structuredContent as Record<string, unknown> | undefined,
  };
}

/** Calls a tool that must succeed and returns its JSON result. */
export async function ok(client: Client, name: string, args: object) {
  const result = await call(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${result.text}`);
  return result.body;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `mnemo` binary to completion. */
export function mnemo(args: readonly string[], options: { cwd?: string; input?: string } = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? tempDir(),
    input: options.input ?? '',
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr } as CliResult;
}

/**
 * Runs the built `mnemo` binary without blocking this process, for tests whose servers
 * (an embeddings server, say) must answer it. `env` is added to this process's.
 */
export function mnemoAsync(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? tempDir(),
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}

/** `mnemo … --json` that must exit 0; its stdout parsed. */
export function mnemoJson(args: readonly string[], options: { cwd?: string; input?: string } = {}) {
  const result = mnemo([...args, '--json'], options);
  if (result.code !== 0) {
    throw new Error(`mnemo ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

/**
 * Starts `mnemo serve --transport http …` and resolves with its URL once it printed it
 * on stderr. The process is stopped (SIGTERM) after the test.
 */
export async function serveHttp(
  args: readonly string[],
): Promise<{ url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--transport', 'http', ...args], {
    cwd: tempDir(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  onCleanup(async () => {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
  const url = await new Promise<string>((done, fail) => {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (\S+)/.exec(stderr);
      if (match) done(match[1] as string);
    });
    void exited.then((code) => fail(new Error(`mnemo serve exited ${code}: ${stderr}`)));
  });
  return { url, stderr: () => stderr };
}
