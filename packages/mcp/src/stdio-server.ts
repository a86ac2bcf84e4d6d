import type { Readable, Writable } from 'node:stream';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createMcpServer, type McpServerOptions } from './mcp-server.js';

export interface StdioServerOptions extends McpServerOptions {
  /** Default `process.stdin`. */
  stdin?: Readable;
  /** Default `process.stdout`. Nothing else may write to it: it carries the protocol. */
  stdout?: Writable;
}

/**
 * Creates the MCP server for one principal and connects it to stdio, as a client that
 * spawned this process expects. Resolves once connected; `server.close()` disconnects.
 */
export async function serveStdio(options: StdioServerOptions): Promise<McpServer> {
  const { stdin, stdout, ...serverOptions } = options;
  const server = createMcpServer(serverOptions);
  const transport = new StdioServerTransport(stdin ?? process.stdin, stdout ?? process.stdout);
  await server.connect(transport);
  answerUnreadableLines(transport);
  return server;
}

/**
 * Answers a line that is not a JSON-RPC message with JSON-RPC's parse error (id
 * null), as the SDK's HTTP transport answers such a body. The SDK's stdio
 * transport only passes it to `onerror` and answers nothing, which leaves a
 * client waiting for the request it meant to send. Call after `connect`, which
 * sets `onerror`.
 */
function answerUnreadableLines(transport: StdioServerTransport): void {
  const reported = transport.onerror;
  transport.onerror = (error) => {
    // The errors of the SDK's `deserializeMessage`: JSON.parse's, then the message schema's.
    const reason =
      error instanceof SyntaxError
        ? 'Invalid JSON'
        : error.name === 'ZodError'
          ? 'Invalid JSON-RPC message'
          : null;
    if (reason !== null) {
      void transport.send({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: `Parse error: ${reason}` },
      } as unknown as JSONRPCMessage);
    }
    reported?.(error);
  };
}
