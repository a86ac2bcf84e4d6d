import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { DEFAULT_LIMITS, type Engine, MnemoError } from '@mnemo/core';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpServer, type McpServerOptions } from './mcp-server.js';
import type { TokenRegistry } from './token-config.js';

export interface HttpServerOptions {
  engine: Engine;
  /** Bearer tokens and their agents (see `loadTokenConfig`). */
  tokens: TokenRegistry;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0: a free port (read it from `url`). */
  port?: number;
  /** The endpoint's path. Default `/mcp`. */
  path?: string;
  /** Allow a host that is not a loopback address. Default false. */
  allowRemote?: boolean;
  /** See `McpServerOptions.onInternalError`; also receives transport failures. */
  onInternalError?: McpServerOptions['onInternalError'];
  /**
   * The largest request body, in bytes, taken; a larger one is answered 413, unread when
   * its `Content-Length` says so, else once more than this has arrived (a chunked body).
   * Default `MAX_REQUEST_BYTES`. Raise it with an engine whose `limits` are raised.
   */
  maxRequestBytes?: number;
}

/**
 * The default largest request body: what a `mnemo.remember` at the default limits can
 * take as JSON, since a client may write each byte of content or metadata as a six-byte
 * escape (`\u0001`; ASCII control characters are content too), plus 1 MiB for its other
 * fields and the envelope. 7.4 MiB; the SDK's own default, 4 MiB, refused some remembers.
 */
export const MAX_REQUEST_BYTES =
  6 * (DEFAULT_LIMITS.maxContentBytes + DEFAULT_LIMITS.maxMetadataBytes) + 1024 * 1024;

export interface RunningHttpServer {
  /** The endpoint, e.g. `http://127.0.0.1:43117/mcp`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /**
   * Stops accepting requests, cuts off those whose body has not all arrived,
   * lets the requests being answered finish (for up to `CLOSE_GRACE_MS`),
   * then closes every connection. Idempotent.
   */
  close(): Promise<void>;
}

/** How long `close()` waits for the requests being answered before it closes their connections. */
export const CLOSE_GRACE_MS = 30_000;

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** True for `localhost`, `::1` and 127.0.0.0/8. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase();
  if (LOOPBACK_NAMES.has(bare)) return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/**
 * Serves MCP over Streamable HTTP. Every request must carry `Authorization: Bearer <token>`;
 * the token decides the agent for that request (401 when it is missing or unknown). The
 * server is stateless: each POST gets a fresh MCP server bound to the token's agent, so a
 * request can never act for another token's agent. GET and DELETE (server-sent streams and
 * sessions) are 405. Bound to loopback unless `allowRemote`; on loopback, requests naming
 * another `Host` are refused (403), which defeats DNS rebinding.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  const path = options.path ?? '/mcp';
  const loopback = isLoopbackHost(host);
  if (!loopback && options.allowRemote !== true) {
    throw new MnemoError(
      'INVALID_INPUT',
      `host: ${host} is not a loopback address; pass allowRemote to listen on it`,
      { details: { field: 'host' } },
    );
  }
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new MnemoError('INVALID_INPUT', 'port: must be an integer from 0 to 65535', {
      details: { field: 'port' },
    });
  }
  const maxRequestBytes = options.maxRequestBytes ?? MAX_REQUEST_BYTES;
  if (!Number.isSafeInteger(maxRequestBytes) || maxRequestBytes < 1) {
    throw new MnemoError('INVALID_INPUT', 'maxRequestBytes: must be a whole number ≥ 1', {
      details: { field: 'maxRequestBytes' },
    });
  }
  const { engine, tokens, onInternalError } = options;

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== path) return reply(response, 404, 'not found');
    if (loopback && !isLoopbackHost(hostName(request.headers.host))) {
      return reply(response, 403, 'this server answers loopback host names only');
    }
    const authentication = tokens.authenticate(request.headers.authorization);
    if (!authentication.ok) {
      response.setHeader(
        'WWW-Authenticate',
        authentication.reason === 'missing'
          ? 'Bearer realm="mnemo"'
          : 'Bearer realm="mnemo", error="invalid_token"',
      );
      return reply(
        response,
        401,
        authentication.reason === 'missing' ? 'a bearer token is required' : 'unknown token',
      );
    }
    if (request.method !== 'POST') {
      response.setHeader('Allow', 'POST');
      return reply(response, 405, 'this stateless server accepts POST only');
    }
    const server = createMcpServer({
      engine,
      principal: authentication.principal,
      ...(onInternalError === undefined ? {} : { onInternalError }),
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: maxRequestBytes,
    });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
  };

  // Requests being answered, so that close() lets them finish, with their requests, so that
  // it can tell those still sending their body; and those close() cut off.
  const answering = new Map<Promise<void>, IncomingMessage>();
  const cut = new WeakSet<IncomingMessage>();
  const http = createServer((request, response) => {
    const answer = handle(request, response).catch((error: unknown) => {
      if (cut.has(request)) return;
      onInternalError?.(error, 'http');
      if (!response.headersSent) reply(response, 500, 'internal error');
      else response.end();
    });
    answering.set(answer, request);
    void answer.finally(() => answering.delete(answer));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const urlHost = isIP(host) === 6 ? `[${host}]` : host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${urlHost}:${boundPort}${path}`,
    host,
    port: boundPort,
    close() {
      closing ??= (async () => {
        // No new connections; idle ones end now, busy ones once their answer is written.
        const closed = new Promise<void>((resolve) => http.close(() => resolve()));
        http.closeIdleConnections();
        // A request whose body has not all arrived is not being answered yet (a client that
        // stalls would otherwise hold the store open until Node's request timeout).
        for (const request of answering.values()) {
          if (request.complete) continue;
          cut.add(request);
          request.socket.destroy();
        }
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...answering.keys()]),
          new Promise((resolve) => {
            timer = setTimeout(resolve, CLOSE_GRACE_MS);
          }),
        ]);
        clearTimeout(timer);
        http.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}

/** The host name of a `Host` header, without the port. */
function hostName(header: string | undefined): string {
  if (header === undefined) return '';
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const colon = header.lastIndexOf(':');
  return colon < 0 ? header : header.slice(0, colon);
}

/** A JSON-RPC error body, as MCP clients expect from a failed HTTP request. */
function reply(response: ServerResponse, status: number, message: string): void {
  response.statusCode = status;
  response.setHeader('Content-Type', 'application/json');
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32_000, message }, id: null }));
}
