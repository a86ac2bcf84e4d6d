import { parseArgs } from 'node:util';
import { MnemoError } from '@mnemo/core';
import { isLoopbackHost, startHttpServer } from '../../http-server.js';
import { toolCallsSettled } from '../../mcp-server.js';
import { serveStdio } from '../../stdio-server.js';
import { loadTokenConfig, type TokenRegistry } from '../../token-config.js';
import {
  COMMON_OPTIONS,
  checkId,
  noPositionals,
  parseChoice,
  parseNumber,
  storeOf,
  usageErrors,
} from '../args.js';
import {
  describeEmbedder,
  EMBEDDER_OPTIONS,
  type EmbedderSpec,
  parseEmbedderSpec,
} from '../embedder-spec.js';
import { brokenPipeHandled, type CliIo } from '../output.js';
import { describeStore, type OpenedEngine, openEngine, type StoreSpec } from '../store-spec.js';
import { UsageError } from '../usage-error.js';

export const SERVE_OPTIONS = {
  transport: { type: 'string' },
  agent: { type: 'string' },
  org: { type: 'string' },
  tokens: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'allow-remote': { type: 'boolean' },
  experience: { type: 'boolean' },
} as const;

/**
 * `mnemo serve`: the MCP server. Over stdio the agent is fixed by `--agent`; over HTTP
 * each request's bearer token names it (`--tokens`). Runs until SIGINT / SIGTERM, or over
 * stdio until the client closes stdin or stdout fails, then closes the store. Exits 1
 * when stdout failed other than by the client going away (EPIPE).
 */
export async function serve(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('serve', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...SERVE_OPTIONS, ...EMBEDDER_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  noPositionals('serve', positionals);
  const transport =
    parseChoice('transport', values.transport, ['stdio', 'http'] as const) ?? 'stdio';
  const spec = storeOf(values);
  const embedderSpec = parseEmbedderSpec(values);
  const log = (message: string) => io.stderr.write(`mnemo: ${message}\n`);
  const onInternalError = (error: unknown, source: string) =>
    log(`internal error in ${source}: ${(error as Error)?.stack ?? String(error)}`);

  if (transport === 'stdio') {
    for (const flag of ['tokens', 'host', 'port', 'allow-remote'] as const) {
      if (values[flag] !== undefined)
        throw new UsageError(`serve: --${flag} is for --transport http`);
    }
    const agent = values.agent;
    if (agent === undefined) {
      throw new UsageError(
        'serve: --agent <id> is required over stdio (the identity of the connection)',
      );
    }
    checkId('serve', 'agent', agent);
    checkId('serve', 'org', values.org);
    const opened = await openEngine(spec, {
      experienceMemory: values.experience === true,
      embedder: embedderSpec,
    });
    const stop = untilStopped(io);
    try {
      const server = await serveStdio({
        engine: opened.engine,
        principal: { agentId: agent, ...(values.org === undefined ? {} : { orgId: values.org }) },
        onInternalError,
        stdin: io.stdin,
        stdout: io.stdout,
      });
      log(
        `serving agent ${values.org === undefined ? agent : `${values.org}/${agent}`} over stdio, ${serving(spec, opened, embedderSpec, values.experience === true)}`,
      );
      await stop.stopped;
      // Requests piped in before stdin ended are still being answered.
      await toolCallsSettled(server);
      await server.close();
    } finally {
      await closeThenDispose(opened, stop);
    }
    const failed = stop.outputError();
    if (failed !== null && failed.code !== 'EPIPE') {
      log(
        `serve: writing to stdout failed: ${failed.message}${failed.code === undefined ? '' : ` (${failed.code})`}`,
      );
      return 1;
    }
    return 0;
  }

  for (const flag of ['agent', 'org'] as const) {
    if (values[flag] !== undefined) {
      throw new UsageError(
        `serve: --${flag} is for --transport stdio; over HTTP each token names its agent`,
      );
    }
  }
  if (values.tokens === undefined) {
    throw new UsageError('serve: --tokens <file> is required over HTTP (tokens and their agents)');
  }
  const host = values.host ?? '127.0.0.1';
  if (!isLoopbackHost(host) && values['allow-remote'] !== true) {
    throw new UsageError(
      `serve: --host ${host} is not a loopback address; add --allow-remote to listen on it (put TLS in front)`,
    );
  }
  const port = parseNumber('port', values.port, { min: 0, max: 65_535, integer: true }) ?? 0;
  const tokens = await readTokens(values.tokens);
  const opened = await openEngine(spec, {
    experienceMemory: values.experience === true,
    embedder: embedderSpec,
  });
  const stop = untilStopped(io, false);
  try {
    const running = await startHttpServer({
      engine: opened.engine,
      tokens,
      host,
      port,
      allowRemote: values['allow-remote'] === true,
      onInternalError,
    });
    log(
      `listening on ${running.url} for ${tokens.size} token${tokens.size === 1 ? '' : 's'}, ${serving(spec, opened, embedderSpec, values.experience === true)}`,
    );
    await stop.stopped;
    await running.close();
  } finally {
    await closeThenDispose(opened, stop);
  }
  return 0;
}

/**
 * Closes the store, then stops listening: a late answer failing while it closes must not
 * end the process (see cli.ts). A second signal does: the first stopped listening for them.
 */
async function closeThenDispose(opened: OpenedEngine, stop: { dispose(): void }): Promise<void> {
  try {
    await opened.close();
  } finally {
    stop.dispose();
  }
}

/** What the server serves from, for its start-up line: the store, the embedder, experience. */
function serving(
  store: StoreSpec,
  opened: OpenedEngine,
  embedder: EmbedderSpec | undefined,
  experience: boolean,
): string {
  return [
    describeStore(store),
    ...(embedder === undefined || opened.embedder === undefined
      ? []
      : [describeEmbedder(embedder, opened.embedder.dimensions)]),
    ...(experience ? ['experience memory on'] : []),
  ].join(', ');
}

async function readTokens(path: string): Promise<TokenRegistry> {
  try {
    return await loadTokenConfig(path);
  } catch (error) {
    if (MnemoError.hasCode(error, 'INVALID_INPUT')) throw new UsageError(`serve: ${error.message}`);
    throw error;
  }
}

/**
 * `stopped` resolves on SIGINT or SIGTERM, and (for stdio) when the client closes stdin or
 * stdout fails (the client stopped reading, EPIPE, or another error; the calls under way
 * still finish, and their answers are dropped). Listening starts once the store is open;
 * `dispose`, once it is closed, stops it.
 */
function untilStopped(
  io: CliIo,
  watchStdin = true,
): {
  stopped: Promise<void>;
  dispose: () => void;
  /** The first error stdout emitted, if any. */
  outputError: () => NodeJS.ErrnoException | null;
} {
  let failed: NodeJS.ErrnoException | null = null;
  let resolve = () => {};
  const stopped = new Promise<void>((done) => {
    resolve = done;
  });
  const unwatch = () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    io.stdin.off('end', stop);
    io.stdin.off('close', stop);
  };
  const stop = () => {
    unwatch();
    resolve();
  };
  const lost = (error: NodeJS.ErrnoException) => {
    failed ??= error;
    stop();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (watchStdin) {
    io.stdin.once('end', stop);
    io.stdin.once('close', stop);
    // Kept until disposed: every answer written after the pipe closed fails too.
    io.stdout.on('error', lost);
    brokenPipeHandled.add(io.stdout);
  }
  return {
    stopped,
    dispose: () => {
      unwatch();
      io.stdout.off('error', lost);
      brokenPipeHandled.delete(io.stdout);
    },
    outputError: () => failed,
  };
}
