import type { Readable, Writable } from 'node:stream';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
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
  await server.connect(new StdioServerTransport(stdin ?? process.stdin, stdout ?? process.stdout));
  return server;
}
