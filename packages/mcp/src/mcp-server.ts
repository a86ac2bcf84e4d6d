import {
  type Engine,
  type ForgetInput,
  type JsonObject,
  type MemoryHandle,
  MnemoError,
  principalKey,
  type RecordFilters,
} from '@mnemo/core';
import { recallPlan, rememberPlan } from '@mnemo/experience';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ifDefined } from './if-defined.js';
import { isoOrNull, renderHead, renderProblem, renderRecall } from './render.js';
import { errorResult, okResult } from './tool-result.js';
import {
  type FiltersInput,
  forgetInput,
  forgetOutput,
  recallInput,
  recallOutput,
  recallPlanInput,
  recallPlanOutput,
  rememberInput,
  rememberOutput,
  rememberPlanInput,
  rememberPlanOutput,
  shareInput,
  shareOutput,
  verifyInput,
  verifyOutput,
} from './tool-schemas.js';
import { VERSION } from './version.js';

/** The tools every server lists. */
export const CORE_TOOLS = [
  'mnemo.remember',
  'mnemo.recall',
  'mnemo.forget',
  'mnemo.share',
  'mnemo.verify',
] as const;
/** The tools listed only when the engine's experience memory is on. */
export const PLAN_TOOLS = ['mnemo.remember_plan', 'mnemo.recall_plan'] as const;

export type ToolName = (typeof CORE_TOOLS)[number] | (typeof PLAN_TOOLS)[number];

export interface McpServerOptions {
  /** Where memory lives. Its `experienceMemory` decides whether the plan tools are listed. */
  engine: Engine;
  /**
   * Who this connection acts as, for every call, for the server's lifetime. Authenticate
   * the caller before creating the server: no tool takes an agent id.
   */
  principal: { agentId: string; orgId?: string };
  /**
   * Receives errors that are not `MnemoError`s (bugs, crashed drivers) with the tool that
   * hit them (or `http` for a failure of the HTTP layer); the client gets only `INTERNAL`.
   * Default: nothing.
   */
  onInternalError?: (error: unknown, source: ToolName | 'http') => void;
}

/** The tool calls each server of `createMcpServer` is running. */
const RUNNING = new WeakMap<McpServer, Set<Promise<unknown>>>();

/**
 * Resolves once `server` (from `createMcpServer`) runs no tool call, including
 * calls for requests its transport has received but not yet dispatched: close
 * the store only after it, or those calls fail and their answers are lost.
 */
export async function toolCallsSettled(server: McpServer): Promise<void> {
  for (;;) {
    // A turn of the event loop, for received requests to reach their tools (and finished
    // calls' answers to be written).
    await new Promise((resolve) => setImmediate(resolve));
    const running = RUNNING.get(server);
    if (running === undefined || running.size === 0) return;
    await Promise.allSettled([...running]);
  }
}

/**
 * An MCP server exposing mnemo's tools for one principal. Connect it to a transport
 * (`server.connect(new StdioServerTransport())`), or use `startHttpServer` for HTTP.
 * Tool failures come back as results with `isError: true`; nothing a client sends makes
 * the server throw. Throws `INVALID_INPUT` for a malformed agent or org id.
 */
export function createMcpServer(options: McpServerOptions): McpServer {
  const { engine, onInternalError } = options;
  const { agentId, orgId } = options.principal;
  const handle = engine.as(agentId, orgId === undefined ? undefined : { orgId });
  const server = new McpServer(
    { name: 'mnemo', version: VERSION },
    {
      instructions:
        'mnemo is a memory store. mnemo.remember stores a memory; mnemo.recall finds memories; ' +
        'mnemo.forget and mnemo.share act on records by id. You always act as the agent this ' +
        'connection was authenticated as.',
    },
  );

  const running = new Set<Promise<unknown>>();
  const run =
    <A>(tool: ToolName, fn: (args: A) => Promise<Record<string, unknown>>) =>
    (args: A): Promise<CallToolResult> => {
      const call = (async () => {
        try {
          return okResult(await fn(args));
        } catch (error) {
          if (!MnemoError.isInstance(error)) onInternalError?.(error, tool);
          return errorResult(error);
        }
      })();
      running.add(call);
      void call.finally(() => running.delete(call));
      return call;
    };

  server.registerTool(
    'mnemo.remember',
    {
      title: 'Remember',
      description:
        'Stores a memory owned by the caller. Returns its id and content hash; the same content, scope and owner as a live memory returns the existing id with deduplicated: true.',
      inputSchema: rememberInput,
      outputSchema: rememberOutput,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    run('mnemo.remember', async (args) => {
      const result = await handle.remember({
        content: args.content,
        ...ifDefined('memoryType', args.memory_type),
        ...ifDefined('scope', args.scope),
        ...ifDefined('importance', args.importance),
        ...ifDefined('tags', args.tags),
        ...ifDefined('metadata', args.metadata as JsonObject | undefined),
        ...ifDefined('threadId', args.thread_id),
        ...ifDefined('sourceType', args.source_type),
        ...ifDefined('expiresAt', toDate(args.expires_at)),
      });
      return {
        id: result.id,
        content_hash: result.contentHash,
        deduplicated: result.deduplicated,
      };
    }),
  );

  server.registerTool(
    'mnemo.recall',
    {
      title: 'Recall',
      description:
        'Finds the memories visible to the caller that best match a query (BM25 lexical, semantic or hybrid), with optional filters.',
      inputSchema: recallInput,
      outputSchema: recallOutput,
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    run('mnemo.recall', async (args) =>
      renderRecall(
        await handle.recall({
          query: args.query,
          ...ifDefined('limit', args.limit),
          ...ifDefined('strategy', args.strategy),
          ...ifDefined('filters', toFilters(args.filters)),
          ...ifDefined('explain', args.explain),
        }),
      ),
    ),
  );

  server.registerTool(
    'mnemo.forget',
    {
      title: 'Forget',
      description:
        'Forgets records by ids, or every visible record matching filters that the caller may delete. mode soft (default), hard or redact.',
      inputSchema: forgetInput,
      outputSchema: forgetOutput,
      annotations: { destructiveHint: true, openWorldHint: false },
    },
    run('mnemo.forget', async (args) => {
      // Passed on as the client sent it: the engine answers both or neither of ids and
      // filters with INVALID_INPUT, as it does for any caller without types.
      const result = await handle.forget({
        ...ifDefined('ids', args.ids),
        ...ifDefined('filters', toFilters(args.filters)),
        ...ifDefined('mode', args.mode),
      } as ForgetInput);
      return { mode: result.mode, forgotten: result.forgotten };
    }),
  );

  server.registerTool(
    'mnemo.share',
    {
      title: 'Share',
      description:
        'Grants other agents of the record’s org a permission (read by default) on a record the caller may share (scope shared, public or global; a private record cannot be shared).',
      inputSchema: shareInput,
      outputSchema: shareOutput,
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    run('mnemo.share', async (args) => {
      const result = await handle.share({
        recordId: args.record_id,
        with: args.with,
        ...ifDefined('permission', args.permission),
        ...ifDefined('expiresAt', toDate(args.expires_at)),
      });
      return {
        record_id: result.recordId,
        permission: result.permission,
        grantees: result.grantees,
        expires_at: isoOrNull(result.expiresAt),
      };
    }),
  );

  server.registerTool(
    'mnemo.verify',
    {
      title: 'Verify the audit log',
      description:
        'Verifies every hash chain of the audit log. Reports whether all chains are intact, and the problems and head of the caller’s own chain (keep the head and pass it as known_heads later to detect a truncated tail).',
      inputSchema: verifyInput,
      outputSchema: verifyOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run('mnemo.verify', async (args) => verify(engine, handle, args.known_heads ?? [])),
  );

  if (engine.experienceMemory) {
    server.registerTool(
      'mnemo.remember_plan',
      {
        title: 'Cache a plan',
        description:
          'Caches a successful retrieval plan (its steps and the chunks it used) under the signature of its query, so that a similar later query can replay it. Outcomes scoring below 0.5 are not cached.',
        inputSchema: rememberPlanInput,
        outputSchema: rememberPlanOutput,
        annotations: { destructiveHint: false, openWorldHint: false },
      },
      run('mnemo.remember_plan', async (args) => {
        const result = await rememberPlan(handle, {
          query: args.query,
          steps: args.steps,
          chunkIds: args.chunk_ids,
          outcomeScore: args.outcome_score,
          ...ifDefined('scope', args.scope),
        });
        return {
          id: result.id,
          signature: result.signature,
          stored: result.stored,
          status: result.stored ? 'plan_cached' : 'below_success_threshold',
          ...ifDefined('deduplicated', result.deduplicated),
          ...ifDefined('reason', result.reason),
        };
      }),
    );

    server.registerTool(
      'mnemo.recall_plan',
      {
        title: 'Find a cached plan',
        description:
          'Finds the best cached plan visible to the caller whose query signature is similar enough to this query. hit is false (plan null) on a miss.',
        inputSchema: recallPlanInput,
        outputSchema: recallPlanOutput,
        annotations: { readOnlyHint: false, openWorldHint: false },
      },
      run('mnemo.recall_plan', async (args) => {
        const result = await recallPlan(handle, {
          query: args.query,
          ...ifDefined('similarityThreshold', args.similarity_threshold),
        });
        const { plan } = result;
        return {
          plan:
            plan === null
              ? null
              : {
                  id: plan.id,
                  query: plan.query,
                  steps: plan.steps,
                  chunk_ids: plan.chunkIds,
                  outcome_score: plan.outcomeScore,
                  similarity: plan.similarity,
                },
          candidates_considered: result.candidatesConsidered,
          hit: plan !== null,
        };
      }),
    );
  }
  RUNNING.set(server, running);
  return server;
}

/**
 * Verifies the whole log, but names only the caller's chain: other agents' ids (the chain
 * names) never reach the caller, only how many of their chains failed.
 */
async function verify(
  engine: Engine,
  handle: MemoryHandle,
  knownHeads: readonly { chain: string; seq: number; hash: string }[],
) {
  const chain = principalKey(handle.principal);
  knownHeads.forEach((head, index) => {
    if (head.chain !== chain) {
      throw new MnemoError(
        'INVALID_INPUT',
        `known_heads[${index}].chain: must be the caller's own chain (${chain})`,
        { details: { field: `known_heads[${index}].chain` } },
      );
    }
  });
  const result = await engine.verifyAudit({ knownHeads });
  const own = result.problems.filter((problem) => problem.chain === chain);
  return {
    ok: result.ok,
    events: result.events,
    chains: result.chains,
    chain,
    problems: own.map(renderProblem),
    other_problems: result.problems.length - own.length,
    heads: result.heads.filter((head) => head.chain === chain).map(renderHead),
  };
}

function toDate(value: string | undefined): Date | undefined {
  return value === undefined ? undefined : new Date(value);
}

function toFilters(filters: FiltersInput | undefined): RecordFilters | undefined {
  if (filters === undefined) return undefined;
  return {
    ...ifDefined('memoryTypes', filters.memory_types),
    ...ifDefined('scopes', filters.scopes),
    ...ifDefined('tagsAny', filters.tags_any),
    ...ifDefined('tagsAll', filters.tags_all),
    ...ifDefined('minImportance', filters.min_importance),
    ...ifDefined('createdAfter', toDate(filters.created_after)),
    ...ifDefined('createdBefore', toDate(filters.created_before)),
    ...ifDefined('threadId', filters.thread_id),
  };
}
