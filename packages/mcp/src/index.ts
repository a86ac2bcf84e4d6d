export {
  CLOSE_GRACE_MS,
  type HttpServerOptions,
  isLoopbackHost,
  MAX_REQUEST_BYTES,
  type RunningHttpServer,
  startHttpServer,
} from './http-server.js';
export {
  CORE_TOOLS,
  createMcpServer,
  type McpServerOptions,
  PLAN_TOOLS,
  type ToolName,
  toolCallsSettled,
} from './mcp-server.js';
export { type RenderedRecord, renderRecord } from './render.js';
export { type StdioServerOptions, serveStdio } from './stdio-server.js';
export {
  type Authentication,
  loadTokenConfig,
  MIN_TOKEN_LENGTH,
  parseTokenConfig,
  type TokenPrincipal,
  type TokenRegistry,
} from './token-config.js';
export { MAX_RESULT_CHARS, type ToolErrorBody } from './tool-result.js';
export { VERSION } from './version.js';
