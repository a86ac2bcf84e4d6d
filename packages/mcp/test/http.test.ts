import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { type MemoryStore, MnemoError } from '@mnemo/core';
import { createDuckDBStore } from '@mnemo/store-duckdb';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it, vi } from 'vitest';
import {
  CORE_TOOLS,
  MAX_REQUEST_BYTES,
  parseTokenConfig,
  startHttpServer,
  type TokenRegistry,
} from '../src/index.js';
import {
  call,
  INITIALIZE_REQUEST,
  ok,
  onCleanup,
  openEngine,
  serveHttp,
  tempDir,
} from './fixture.js';

const TOKEN_A = 'token-for-agent-a-0123456789';
const TOKEN_B = 'token-for-agent-b-0123456789';

const tokens = parseTokenConfig({
  tokens: [
    { token: TOKEN_A, agent: 'agent-a' },
    // The file may hold a token's SHA-256 instead of the token.
    { token_sha256: createHash('sha256').update(TOKEN_B).digest('hex'), agent: 'agent-b' },
  ],
});

async function start(options: { experienceMemory?: boolean } = {}) {
  const { engine } = await openEngine(options);
  const server = await startHttpServer({ engine, tokens });
  onCleanup(() => server.close());
  return { engine, server };
}

async function connectHttp(url: string, token: string | undefined): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'mnemo-http-test', version: '1.0.0' });
  await client.connect(transport);
  onCleanup(() => client.close());
  return client;
}

const INITIALIZE = JSON.stringify(INITIALIZE_REQUEST);

/** A raw HTTP request (node:http, so that any Host header can be sent). */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...options.headers,
        },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the Streamable HTTP transport', () => {
  it('binds to loopback and serves an authenticated client', async () => {
    const { server } = await start();
    expect(server.host).toBe('127.0.0.1');
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/mcp`);
    const client = await connectHttp(server.url, TOKEN_A);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([...CORE_TOOLS]);
    const stored = await ok(client, 'mnemo.remember', { content: 'the otter den is upstream' });
    const found = await ok(client, 'mnemo.recall', { query: 'otter' });
    expect(found.hits).toEqual([
      {
        record: expect.objectContaining({ id: stored.id, agent_id: 'agent-a' }),
        score: expect.any(Number),
      },
    ]);
    expect((await call(client, 'mnemo.forget', { ids: ['nope'] })).body).toEqual({
      error: { code: 'NOT_FOUND', message: 'no record nope visible to the caller' },
    });
  });

  it('takes the largest remember a client can send: 1 MiB of control characters, 6 MiB of JSON', async () => {
    const { engine, server } = await start();
    const client = await connectHttp(server.url, TOKEN_A);
    // JSON writes each of these characters as \u0001: six bytes for one.
    const content = '\u0001'.repeat(1024 * 1024);
    const stored = await ok(client, 'mnemo.remember', { content });
    const [record] = await engine.as('agent-a').getMany([stored.id as string]);
    expect(record?.content).toBe(content);
    // Past that, the transport refuses the body unread.
    const tooLarge = await raw(server.url, {
      headers: {
        authorization: `Bearer ${TOKEN_A}`,
        'content-length': String(MAX_REQUEST_BYTES + 1),
      },
    });
    expect(tooLarge.status).toBe(413);
  });

  it('maps two tokens to two agents that cannot see each other’s private records', async () => {
    const { server } = await start();
    const a = await connectHttp(server.url, TOKEN_A);
    const b = await connectHttp(server.url, TOKEN_B);
    await ok(a, 'mnemo.remember', { content: 'agent a private: the key is under the mat' });
    const fromB = await ok(b, 'mnemo.remember', {
      content: 'agent b private: the key is in the pot',
    });
    await ok(a, 'mnemo.remember', { content: 'agent a global: the key rules', scope: 'global' });
    const seenByA = await ok(a, 'mnemo.recall', { query: 'key' });
    const seenByB = await ok(b, 'mnemo.recall', { query: 'key' });
    const owners = (result: Record<string, unknown>) =>
      (result.hits as { record: { agent_id: string; scope: string } }[])
        .map((hit) => `${hit.record.agent_id}/${hit.record.scope}`)
        .sort();
    expect(owners(seenByA)).toEqual(['agent-a/global', 'agent-a/private']);
    expect(owners(seenByB)).toEqual(['agent-a/global', 'agent-b/private']);
    // a cannot touch b's record: for a it does not exist.
    expect((await call(a, 'mnemo.forget', { ids: [fromB.id as string] })).body).toMatchObject({
      error: { code: 'NOT_FOUND' },
    });
    // Each token's own audit chain.
    expect((await ok(b, 'mnemo.verify', {})).chain).toBe('agent-b');
  });

  it('answers 401 to a missing token, with a bearer challenge', async () => {
    const { server } = await start();
    const response = await raw(server.url, { body: INITIALIZE });
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="mnemo"');
    expect(JSON.parse(response.body)).toEqual({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'a bearer token is required' },
      id: null,
    });
    const notBearer = await raw(server.url, {
      body: INITIALIZE,
      headers: { authorization: `Basic ${TOKEN_A}` },
    });
    expect(notBearer.status).toBe(401);
    await expect(connectHttp(server.url, undefined)).rejects.toSatisfy(
      (error) => error instanceof StreamableHTTPError && error.code === 401,
    );
  });

  it('answers 401 to a wrong token', async () => {
    const { server, engine } = await start();
    const response = await raw(server.url, {
      body: INITIALIZE,
      headers: { authorization: `Bearer ${TOKEN_A}x` },
    });
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe(
      'Bearer realm="mnemo", error="invalid_token"',
    );
    expect(JSON.parse(response.body).error.message).toBe('unknown token');
    // The digest itself is not a token.
    const digest = createHash('sha256').update(TOKEN_B).digest('hex');
    expect(
      (await raw(server.url, { body: INITIALIZE, headers: { authorization: `Bearer ${digest}` } }))
        .status,
    ).toBe(401);
    await expect(connectHttp(server.url, 'wrong-token-0123456789')).rejects.toSatisfy(
      (error) => error instanceof StreamableHTTPError && error.code === 401,
    );
    // A valid token works on the same server, and nothing was written before.
    expect((await engine.verifyAudit()).events).toBe(0);
    const response2 = await raw(server.url, {
      body: INITIALIZE,
      headers: { authorization: `bearer ${TOKEN_A}` },
    });
    expect(response2.status).toBe(200);
    expect(JSON.parse(response2.body).result.serverInfo.name).toBe('mnemo');
  });

  it('refuses GET streams, other paths and foreign Host headers', async () => {
    const { server } = await start();
    const auth = { authorization: `Bearer ${TOKEN_A}` };
    const get = await raw(server.url, { method: 'GET', headers: auth });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(
      (await raw(server.url.replace('/mcp', '/other'), { body: INITIALIZE, headers: auth })).status,
    ).toBe(404);
    const rebound = await raw(server.url, {
      body: INITIALIZE,
      headers: { ...auth, host: `evil.example:${server.port}` },
    });
    expect(rebound.status).toBe(403);
    const localhost = await raw(server.url, {
      body: INITIALIZE,
      headers: { ...auth, host: `localhost:${server.port}` },
    });
    expect(localhost.status).toBe(200);
  });

  it('answers the IPv6 loopback Host, with or without a port', async () => {
    const { server } = await start();
    const auth = { authorization: `Bearer ${TOKEN_A}` };
    // Without a port (as a client of port 80 sends it), the colons are the address's own.
    for (const host of [`[::1]:${server.port}`, '[::1]']) {
      const response = await raw(server.url, { body: INITIALIZE, headers: { ...auth, host } });
      expect([host, response.status]).toEqual([host, 200]);
    }
    const other = await raw(server.url, {
      body: INITIALIZE,
      headers: { ...auth, host: `[::2]:${server.port}` },
    });
    expect(other.status).toBe(403);
  });

  it('refuses DELETE, like GET, with 405: the server keeps no session to end', async () => {
    const { server } = await start();
    const response = await raw(server.url, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN_A}` },
    });
    expect([response.status, response.headers.allow]).toEqual([405, 'POST']);
  });

  it('answers 404 on a path that only starts with the endpoint', async () => {
    const { server } = await start();
    const auth = { authorization: `Bearer ${TOKEN_A}` };
    for (const path of ['/mcp/', '/mcp/tools', '/mcpx']) {
      const response = await raw(server.url.replace('/mcp', path), {
        body: INITIALIZE,
        headers: auth,
      });
      expect([path, response.status]).toEqual([path, 404]);
    }
  });

  it('answers 500 and tells onInternalError when the HTTP layer fails', async () => {
    const { engine } = await openEngine();
    const failure = new Error('token store unreachable');
    // A registry is an interface: one that throws stands for any failure before the MCP server.
    const failing: TokenRegistry = {
      size: 1,
      authenticate: () => {
        throw failure;
      },
    };
    const onInternalError = vi.fn();
    const server = await startHttpServer({ engine, tokens: failing, onInternalError });
    onCleanup(() => server.close());
    const response = await raw(server.url, {
      body: INITIALIZE,
      headers: { authorization: `Bearer ${TOKEN_A}` },
    });
    expect([response.status, JSON.parse(response.body)]).toEqual([
      500,
      { jsonrpc: '2.0', error: { code: -32000, message: 'internal error' }, id: null },
    ]);
    expect(onInternalError).toHaveBeenCalledExactlyOnceWith(failure, 'http');
  });

  it('refuses a maxRequestBytes that is not a whole number ≥ 1 with INVALID_INPUT', async () => {
    const { engine } = await openEngine();
    for (const maxRequestBytes of [0, 1.5, Number.NaN]) {
      const error = await startHttpServer({ engine, tokens, maxRequestBytes }).catch((e) => e);
      expect(MnemoError.hasCode(error, 'INVALID_INPUT')).toBe(true);
      expect(error.message).toBe('maxRequestBytes: must be a whole number ≥ 1');
    }
    const small = await startHttpServer({ engine, tokens, maxRequestBytes: 1000 });
    onCleanup(() => small.close());
    const client = await connectHttp(small.url, TOKEN_A);
    const refused = await call(client, 'mnemo.remember', { content: 'x'.repeat(1000) }).catch(
      (e) => e,
    );
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(413);
    // Without a Content-Length (chunked), the body is read up to the limit, then refused.
    const chunked = await raw(small.url, {
      headers: { authorization: `Bearer ${TOKEN_A}`, 'transfer-encoding': 'chunked' },
      body: JSON.stringify({ ...INITIALIZE_REQUEST, padding: 'x'.repeat(1000) }),
    });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body)).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32_000,
        message: 'Payload Too Large: Request body must not exceed 1000 bytes',
      },
      id: null,
    });
  });

  it('refuses a port outside 0-65535 with INVALID_INPUT', async () => {
    const { engine } = await openEngine();
    for (const port of [-1, 65_536, 1.5]) {
      await expect(startHttpServer({ engine, tokens, port })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: 'port: must be an integer from 0 to 65535',
      });
    }
  });

  it('finishes the requests it is answering before it closes', async () => {
    // A store whose writes wait at a gate: the request is in flight when close() begins.
    const inner = createDuckDBStore({ path: ':memory:' });
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let entered: () => void = () => undefined;
    const writing = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const store: MemoryStore = Object.create(inner);
    store.init = () => inner.init();
    store.close = () => inner.close();
    store.transaction = async (fn) => {
      entered();
      await gate;
      return inner.transaction(fn);
    };
    const { engine } = await openEngine({ store });
    const server = await startHttpServer({ engine, tokens });
    onCleanup(() => server.close());
    const client = await connectHttp(server.url, TOKEN_A);
    const answer = call(client, 'mnemo.remember', { content: 'written while closing' });
    // The server is answering the request once its write has begun.
    await writing;
    const closed = server.close();
    open();
    const result = await answer;
    await closed;
    expect(result.isError).toBe(false);
    expect((await engine.as('agent-a').recall({ query: 'closing' })).hits).toHaveLength(1);
    // Closed: a new request is refused.
    await expect(connectHttp(server.url, TOKEN_A)).rejects.toThrow();
  });

  it('cuts off a request whose body has not all arrived when it closes', async () => {
    const { server } = await start();
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.write(
      [
        'POST /mcp HTTP/1.1',
        'Host: 127.0.0.1',
        `Authorization: Bearer ${TOKEN_A}`,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        'Content-Length: 100',
        '',
        '{"jsonrpc"',
      ].join('\r\n'),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await server.close();
    await ended;
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('will not listen on a non-loopback host unless allowed', async () => {
    const { engine } = await openEngine();
    await expect(startHttpServer({ engine, tokens, host: '0.0.0.0' })).rejects.toSatisfy((error) =>
      MnemoError.hasCode(error, 'INVALID_INPUT'),
    );
  });

  it('runs as `mnemo serve --transport http` with a tokens file', async () => {
    const dir = tempDir();
    const tokenFile = join(dir, 'tokens.json');
    writeFileSync(
      tokenFile,
      JSON.stringify({ tokens: [{ token: TOKEN_A, agent: 'agent-a', org: 'acme' }] }),
    );
    const { url, stderr } = await serveHttp([
      '--tokens',
      tokenFile,
      '--port',
      '0',
      '--experience',
      '--store',
      `duckdb:${join(dir, 'http.duckdb')}`,
    ]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(stderr()).toContain('for 1 token,');
    const client = await connectHttp(url, TOKEN_A);
    expect((await client.listTools()).tools).toHaveLength(7);
    expect((await ok(client, 'mnemo.verify', {})).chain).toBe('acme/agent-a');
    expect((await raw(url, { body: INITIALIZE })).status).toBe(401);
    expect(
      (
        await raw(url, {
          body: INITIALIZE,
          headers: { authorization: 'Bearer not-the-token-000000' },
        })
      ).status,
    ).toBe(401);
  });
});
