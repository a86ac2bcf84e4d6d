import { type Engine, MAX_RECALL_LIMIT, MnemoError } from '@mnemo/core';
import { describe, expect, it, vi } from 'vitest';
import { CORE_TOOLS, createMcpServer, MAX_RESULT_CHARS, PLAN_TOOLS } from '../src/index.js';
import { call, connect, ok, openEngine, START } from './fixture.js';

const HASH = /^[0-9a-f]{64}$/;

describe('the MCP server, through an in-process SDK client', () => {
  it('lists the five core tools with strict snake_case input schemas, and no plan tools', async () => {
    const { engine } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([...CORE_TOOLS]);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.inputSchema.additionalProperties).toBe(false);
      expect(Object.keys(tool.inputSchema.properties ?? {})).not.toContain('agent_id');
      expect(tool.outputSchema?.type).toBe('object');
      expect(tool.description).toBeTruthy();
    }
    const remember = tools.find((tool) => tool.name === 'mnemo.remember');
    expect(Object.keys(remember?.inputSchema.properties ?? {})).toEqual([
      'content',
      'memory_type',
      'scope',
      'importance',
      'tags',
      'metadata',
      'thread_id',
      'source_type',
      'expires_at',
    ]);
    expect(remember?.inputSchema.required).toEqual(['content']);
    const inputs = (remember?.inputSchema.properties ?? {}) as Record<string, { type?: string }>;
    expect(inputs.metadata?.type).toBe('object');
    const recall = tools.find((tool) => tool.name === 'mnemo.recall');
    const properties = (recall?.inputSchema.properties ?? {}) as Record<
      string,
      Record<string, unknown>
    >;
    const filters = properties.filters;
    expect(filters?.additionalProperties).toBe(false);
    expect(Object.keys(filters?.properties as object)).toEqual([
      'memory_types',
      'scopes',
      'tags_any',
      'tags_all',
      'min_importance',
      'created_after',
      'created_before',
      'thread_id',
    ]);
  });

  it('lists the plan tools too when experience memory is on', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([...CORE_TOOLS, ...PLAN_TOOLS]);
  });

  it('remembers and recalls with snake_case fields, ISO dates and no embedding', async () => {
    const { engine } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const stored = await ok(client, 'mnemo.remember', {
      content: 'The heron nests by the north pond',
      memory_type: 'semantic',
      scope: 'public',
      importance: 0.8,
      tags: ['birds', 'pond'],
      metadata: { source: 'walk', count: 2 },
      thread_id: 'walk-1',
      source_type: 'note',
      expires_at: '2027-01-01T00:00:00Z',
    });
    expect(stored).toEqual({
      id: 'id-000001',
      content_hash: expect.stringMatching(HASH),
      deduplicated: false,
    });
    expect(
      await ok(client, 'mnemo.remember', { content: 'Ducks sleep on the south pond' }),
    ).toEqual({ id: 'id-000003', content_hash: expect.stringMatching(HASH), deduplicated: false });
    // The same memory again is not stored twice.
    expect(
      await ok(client, 'mnemo.remember', {
        content: 'The heron nests by the north pond',
        scope: 'public',
      }),
    ).toEqual({ id: 'id-000001', content_hash: stored.content_hash, deduplicated: true });

    const found = await ok(client, 'mnemo.recall', { query: 'heron pond', explain: true });
    expect(found.strategy).toBe('lexical');
    const hits = found.hits as Record<string, unknown>[];
    expect(hits.map((hit) => (hit.record as { id: string }).id)).toEqual([
      'id-000001',
      'id-000003',
    ]);
    expect(hits[0]).toEqual({
      record: {
        id: 'id-000001',
        agent_id: 'agent-a',
        org_id: null,
        content: 'The heron nests by the north pond',
        memory_type: 'semantic',
        scope: 'public',
        importance: 0.8,
        tags: ['birds', 'pond'],
        metadata: { source: 'walk', count: 2 },
        content_hash: stored.content_hash,
        thread_id: 'walk-1',
        source_type: 'note',
        created_at: START,
        updated_at: START,
        expires_at: '2027-01-01T00:00:00.000Z',
        deleted_at: null,
        access_count: 0,
        last_accessed_at: null,
      },
      score: expect.any(Number),
      explain: { lexical: { rank: 1, score: hits[0]?.score } },
    });

    const filtered = await ok(client, 'mnemo.recall', {
      query: 'pond',
      limit: 5,
      strategy: 'lexical',
      filters: {
        tags_any: ['birds'],
        memory_types: ['semantic'],
        scopes: ['public'],
        min_importance: 0.5,
        created_after: '2025-12-31T00:00:00Z',
        created_before: '2026-01-02T00:00:00+01:00',
        thread_id: 'walk-1',
      },
    });
    expect((filtered.hits as { record: { id: string } }[]).map((hit) => hit.record.id)).toEqual([
      'id-000001',
    ]);
    expect(filtered.hits).toEqual([
      { record: expect.objectContaining({ id: 'id-000001' }), score: expect.any(Number) },
    ]);
  });

  it('forgets by ids and by filters, and reports an unknown id as NOT_FOUND', async () => {
    const { engine } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    await ok(client, 'mnemo.remember', { content: 'first note', tags: ['x'] });
    await ok(client, 'mnemo.remember', { content: 'second note', tags: ['y'] });
    expect(await ok(client, 'mnemo.forget', { ids: ['id-000001'] })).toEqual({
      mode: 'soft',
      forgotten: ['id-000001'],
    });
    expect(
      await ok(client, 'mnemo.forget', { filters: { tags_any: ['y'] }, mode: 'redact' }),
    ).toEqual({ mode: 'redact', forgotten: ['id-000003'] });
    expect((await ok(client, 'mnemo.recall', { query: 'note' })).hits).toEqual([]);

    const missing = await call(client, 'mnemo.forget', { ids: ['id-999999'] });
    expect(missing.isError).toBe(true);
    expect(missing.body).toEqual({
      error: { code: 'NOT_FOUND', message: 'no record id-999999 visible to the caller' },
    });
    const neither = await call(client, 'mnemo.forget', { mode: 'hard' });
    expect(neither.body).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: 'input: give exactly one of ids or filters',
        field: 'input',
      },
    });
  });

  it('shares a record with another agent, whose own connection then sees it', async () => {
    const { engine } = await openEngine();
    const a = await connect({ engine, principal: { agentId: 'agent-a' } });
    const b = await connect({ engine, principal: { agentId: 'agent-b' } });
    await ok(a, 'mnemo.remember', { content: 'the shared plan for the garden', scope: 'shared' });
    await ok(a, 'mnemo.remember', { content: 'the private garden diary' });
    expect((await ok(b, 'mnemo.recall', { query: 'garden' })).hits).toEqual([]);
    expect(
      await ok(a, 'mnemo.share', {
        record_id: 'id-000001',
        with: ['agent-b'],
        permission: 'write',
        expires_at: '2026-06-01T00:00:00Z',
      }),
    ).toEqual({
      record_id: 'id-000001',
      permission: 'write',
      grantees: ['agent-b'],
      expires_at: '2026-06-01T00:00:00.000Z',
    });
    const seen = await ok(b, 'mnemo.recall', { query: 'garden' });
    expect((seen.hits as { record: { id: string } }[]).map((hit) => hit.record.id)).toEqual([
      'id-000001',
    ]);
    // agent-b cannot forget or share agent-a's private record: to it, it does not exist.
    expect((await call(b, 'mnemo.forget', { ids: ['id-000003'] })).body).toEqual({
      error: { code: 'NOT_FOUND', message: 'no record id-000003 visible to the caller' },
    });
    expect((await call(b, 'mnemo.share', { record_id: 'id-000001', with: ['c'] })).body).toEqual({
      error: {
        code: 'PERMISSION_DENIED',
        message: 'the caller lacks share permission on id-000001',
      },
    });
    const privateShare = await call(a, 'mnemo.share', { record_id: 'id-000003', with: ['b'] });
    expect(privateShare.body).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: 'record_id: a private record cannot be shared; remember it with scope "shared"',
        field: 'record_id',
      },
    });
  });

  it('verifies the audit log and names only the caller’s own chain', async () => {
    const { engine } = await openEngine();
    const a = await connect({ engine, principal: { agentId: 'agent-a', orgId: 'acme' } });
    const b = await connect({ engine, principal: { agentId: 'agent-b' } });
    await ok(a, 'mnemo.remember', { content: 'one' });
    await ok(a, 'mnemo.remember', { content: 'two' });
    await ok(b, 'mnemo.remember', { content: 'three' });
    const verified = await ok(a, 'mnemo.verify', {});
    expect(verified).toEqual({
      ok: true,
      events: 3,
      chains: 2,
      chain: 'acme/agent-a',
      problems: [],
      other_problems: 0,
      heads: [{ chain: 'acme/agent-a', seq: 2, hash: expect.stringMatching(HASH) }],
    });
    expect(await ok(a, 'mnemo.verify', { known_heads: verified.heads as object[] })).toEqual(
      verified,
    );
    const stale = await ok(a, 'mnemo.verify', {
      known_heads: [{ chain: 'acme/agent-a', seq: 2, hash: 'f'.repeat(64) }],
    });
    expect(stale).toEqual({
      ...verified,
      ok: false,
      problems: [
        {
          kind: 'truncated',
          chain: 'acme/agent-a',
          seq: 3,
          event_id: null,
          message: 'chain acme/agent-a no longer reaches the known head at seq 2',
        },
      ],
    });
    expect(
      (await call(a, 'mnemo.verify', { known_heads: [{ chain: 'agent-b', seq: 1, hash: 'x' }] }))
        .body,
    ).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: "known_heads[0].chain: must be the caller's own chain (acme/agent-a)",
        field: 'known_heads[0].chain',
      },
    });
  });

  it('caches and replays plans when experience memory is on', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const herons = {
      query: 'How do herons hunt fish?',
      steps: ['recall herons', 'summarize'],
      chunk_ids: ['c1', 'c2'],
      outcome_score: 0.9,
    };
    const cached = {
      id: 'id-000001',
      signature: ['fish', 'herons', 'how', 'hunt'],
      stored: true,
      status: 'plan_cached',
    };
    expect(await ok(client, 'mnemo.remember_plan', herons)).toEqual(cached);
    expect(await ok(client, 'mnemo.remember_plan', herons)).toEqual({
      ...cached,
      deduplicated: true,
    });
    expect(
      await ok(client, 'mnemo.remember_plan', {
        query: 'Where do ducks sleep?',
        steps: ['recall ducks'],
        chunk_ids: [],
        outcome_score: 0.2,
        scope: 'public',
      }),
    ).toEqual({
      id: null,
      signature: ['ducks', 'sleep', 'where'],
      stored: false,
      status: 'below_success_threshold',
      reason: 'below_success_threshold',
    });
    expect(
      await ok(client, 'mnemo.remember_plan', {
        query: 'a b c',
        steps: [],
        chunk_ids: [],
        outcome_score: 1,
      }),
    ).toEqual({
      id: null,
      signature: [],
      stored: false,
      status: 'below_success_threshold',
      reason: 'empty_signature',
    });
    expect(await ok(client, 'mnemo.recall_plan', { query: 'how do HERONS hunt fish' })).toEqual({
      plan: {
        id: 'id-000001',
        query: 'How do herons hunt fish?',
        steps: ['recall herons', 'summarize'],
        chunk_ids: ['c1', 'c2'],
        outcome_score: 0.9,
        similarity: 1,
      },
      candidates_considered: 1,
      hit: true,
    });
    expect(
      await ok(client, 'mnemo.recall_plan', {
        query: 'how do herons catch fish',
        similarity_threshold: 0.9,
      }),
      // 3 of the query's 4 tokens are shared; similarity 0.9 needs all 4, so no plan is a candidate.
    ).toEqual({ plan: null, candidates_considered: 0, hit: false });
    expect(await ok(client, 'mnemo.recall_plan', { query: 'nothing alike' })).toEqual({
      plan: null,
      candidates_considered: 0,
      hit: false,
    });
    // Plans never come back from ordinary recall.
    expect((await ok(client, 'mnemo.recall', { query: 'herons fish' })).hits).toEqual([]);
  });

  it('does not know the plan tools when experience memory is off', async () => {
    const { engine } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const result = await call(client, 'mnemo.remember_plan', {
      query: 'q',
      steps: [],
      chunk_ids: [],
      outcome_score: 1,
    });
    expect(result.isError).toBe(true);
    expect(result.text).toBe('MCP error -32602: Tool mnemo.remember_plan not found');
  });

  it('rejects agent_id (or any unknown field) in every tool as invalid input, storing nothing', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const valid: Record<string, object> = {
      'mnemo.remember': { content: 'hello' },
      'mnemo.recall': { query: 'hello' },
      'mnemo.forget': { ids: ['id-000001'] },
      'mnemo.share': { record_id: 'id-000001', with: ['agent-c'] },
      'mnemo.verify': {},
      'mnemo.remember_plan': { query: 'hello there', steps: [], chunk_ids: [], outcome_score: 1 },
      'mnemo.recall_plan': { query: 'hello there' },
    };
    for (const [name, args] of Object.entries(valid)) {
      const result = await call(client, name, { ...args, agent_id: 'agent-b' });
      expect(result.isError).toBe(true);
      expect(result.text).toBe(
        `MCP error -32602: Input validation error: Invalid arguments for tool ${name}: Unrecognized key: "agent_id"`,
      );
    }
    const nested = await call(client, 'mnemo.recall', {
      query: 'hello',
      filters: { agent_id: 'agent-b' },
    });
    expect(nested.text).toBe(
      'MCP error -32602: Input validation error: Invalid arguments for tool mnemo.recall: Unrecognized key: "agent_id" at filters',
    );
    // A `__proto__` key is refused at the top of metadata as the engine refuses it below.
    for (const metadata of ['{"__proto__":{"x":1},"keep":true}', '{"n":{"__proto__":{"x":1}}}']) {
      const result = await call(client, 'mnemo.remember', {
        content: 'hello',
        metadata: JSON.parse(metadata),
      });
      expect([metadata, result.isError]).toEqual([metadata, true]);
      expect(result.text).toContain('__proto__');
    }
    const events = await engine.verifyAudit();
    expect(events.events).toBe(0);
  });

  it('turns engine errors into isError results with their code, and keeps serving', async () => {
    const { engine } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const semantic = await call(client, 'mnemo.recall', { query: 'x', strategy: 'semantic' });
    expect(semantic).toEqual({
      isError: true,
      text: JSON.stringify(semantic.body),
      body: {
        error: {
          code: 'EMBEDDER_NOT_CONFIGURED',
          message: 'semantic recall needs a semantic embedder; the engine has the no-op embedder',
        },
      },
      structured: undefined,
    });
    expect((await call(client, 'mnemo.remember', { content: '   ' })).body).toEqual({
      error: { code: 'INVALID_INPUT', message: 'content: must not be blank', field: 'content' },
    });
    expect(
      (await call(client, 'mnemo.remember', { content: 'x', tags: ['__plan__'] })).body,
    ).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: 'tags: tag "__plan__" is reserved',
        field: 'tags',
      },
    });
    expect(
      (await call(client, 'mnemo.remember', { content: 'x', expires_at: '2020-01-01T00:00:00Z' }))
        .body,
    ).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: 'expires_at: must be in the future',
        field: 'expires_at',
      },
    });
    expect((await ok(client, 'mnemo.remember', { content: 'still serving' })).id).toBe('id-000001');
  });

  it('answers INVALID_INPUT instead of a result too large to send, and keeps serving', async () => {
    const { engine } = await openEngine();
    // Each record's JSON doubles its quotes: 17 of them pass MAX_RESULT_CHARS together.
    const content = `kestrel ${'"'.repeat(1024 * 1024 - 16)}`;
    await engine
      .as('agent-a')
      .rememberMany(Array.from({ length: 17 }, (_, i) => ({ content: `${i} ${content}` })));
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const large = await call(client, 'mnemo.recall', { query: 'kestrel', limit: 17 });
    expect([large.isError, large.body]).toEqual([
      true,
      {
        error: {
          code: 'INVALID_INPUT',
          message: `the answer would be more than ${MAX_RESULT_CHARS} characters of JSON, too large to send: ask for fewer or smaller records (a lower limit)`,
        },
      },
    ]);
    const fits = await ok(client, 'mnemo.recall', { query: 'kestrel', limit: 8 });
    expect((fits.hits as unknown[]).length).toBe(8);
  });

  it('reports an unexpected failure as INTERNAL, tells onInternalError, and keeps serving', async () => {
    const { engine, store } = await openEngine();
    const failure = new TypeError('driver exploded');
    const searchLexical = store.searchLexical.bind(store);
    const spy = vi
      .spyOn(store, 'searchLexical')
      .mockImplementationOnce(() => Promise.reject(failure))
      .mockImplementation(searchLexical);
    const onInternalError = vi.fn();
    const client = await connect({ engine, principal: { agentId: 'agent-a' }, onInternalError });
    await ok(client, 'mnemo.remember', { content: 'a note about kestrels' });
    const failed = await call(client, 'mnemo.recall', { query: 'kestrels' });
    expect(failed.isError).toBe(true);
    expect(failed.body).toEqual({
      error: { code: 'INTERNAL', message: 'internal error; see the server log' },
    });
    expect(onInternalError).toHaveBeenCalledExactlyOnceWith(failure, 'mnemo.recall');
    const again = await ok(client, 'mnemo.recall', { query: 'kestrels' });
    expect((again.hits as unknown[]).length).toBe(1);
    expect(spy).toHaveBeenCalledTimes(2);
  });

  it('counts the failed chains of other agents without naming them', async () => {
    const { engine } = await openEngine();
    await engine.as('agent-b').remember({ content: 'b writes' });
    // A broken chain of agent-b, added to the real verification: rewriting stored events
    // would need store internals, and the tool only counts what the engine reports.
    const broken = {
      kind: 'hash_mismatch' as const,
      chain: 'agent-b',
      seq: 1,
      eventId: 'id-000002',
      message: 'event 1 of chain agent-b does not match its hash',
    };
    const tampered: Engine = {
      ...engine,
      verifyAudit: async (options) => {
        const result = await engine.verifyAudit(options);
        return { ...result, ok: false, problems: [...result.problems, broken] };
      },
    };
    const a = await connect({ engine: tampered, principal: { agentId: 'agent-a' } });
    await ok(a, 'mnemo.remember', { content: 'a writes' });
    const verified = await ok(a, 'mnemo.verify', {});
    expect(verified).toEqual({
      ok: false,
      events: 2,
      chains: 2,
      chain: 'agent-a',
      problems: [],
      other_problems: 1,
      heads: [{ chain: 'agent-a', seq: 1, hash: expect.stringMatching(HASH) }],
    });
    expect(JSON.stringify(verified)).not.toContain('agent-b');
  });

  it('applies tags_all, min_importance and created_before each on its own', async () => {
    const { engine, clock } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    // id-000001: both tags, important, written at START; id-000003: one tag, minor, an hour later.
    await ok(client, 'mnemo.remember', { content: 'owl one', tags: ['x', 'y'], importance: 0.9 });
    clock.advance(3_600_000);
    await ok(client, 'mnemo.remember', { content: 'owl two', tags: ['x'], importance: 0.3 });
    const ids = async (filters: object) =>
      (
        (await ok(client, 'mnemo.recall', { query: 'owl', filters })).hits as {
          record: { id: string };
        }[]
      )
        .map((hit) => hit.record.id)
        .sort();
    expect(await ids({})).toEqual(['id-000001', 'id-000003']);
    expect(await ids({ tags_all: ['x', 'y'] })).toEqual(['id-000001']);
    expect(await ids({ min_importance: 0.5 })).toEqual(['id-000001']);
    expect(await ids({ created_before: '2026-01-01T00:30:00Z' })).toEqual(['id-000001']);
    expect(await ids({ created_after: '2026-01-01T00:30:00Z' })).toEqual(['id-000003']);
  });

  it('publishes the bounds of numbers in the input schemas, and refuses a call outside them', async () => {
    const { engine } = await openEngine({ experienceMemory: true });
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const { tools } = await client.listTools();
    const property = (tool: string, ...path: string[]) => {
      let schema = tools.find((listed) => listed.name === tool)?.inputSchema as Record<
        string,
        unknown
      >;
      for (const key of path) {
        schema = (schema.properties as Record<string, Record<string, unknown>>)[key] as Record<
          string,
          unknown
        >;
      }
      return schema;
    };
    expect(property('mnemo.remember', 'importance')).toMatchObject({ minimum: 0, maximum: 1 });
    expect(property('mnemo.recall', 'limit')).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: MAX_RECALL_LIMIT,
    });
    expect(property('mnemo.recall', 'filters', 'min_importance')).toMatchObject({
      minimum: 0,
      maximum: 1,
    });
    expect(property('mnemo.recall_plan', 'similarity_threshold')).toMatchObject({
      exclusiveMinimum: 0,
      maximum: 1,
    });
    const heads = property('mnemo.verify', 'known_heads').items as Record<string, unknown>;
    expect((heads.properties as Record<string, unknown>).seq).toMatchObject({ minimum: 1 });
    // The SDK checks the schema before the tool runs: nothing reaches the engine.
    for (const [tool, args] of [
      ['mnemo.remember', { content: 'x', importance: 1.5 }],
      ['mnemo.recall', { query: 'x', limit: MAX_RECALL_LIMIT + 1 }],
      ['mnemo.recall_plan', { query: 'x', similarity_threshold: 0 }],
    ] as const) {
      const result = await call(client, tool, args);
      expect([tool, result.isError, result.text]).toEqual([
        tool,
        true,
        expect.stringMatching(
          new RegExp(
            `^MCP error -32602: Input validation error: Invalid arguments for tool ${tool.replace('.', '\\.')}:`,
          ),
        ),
      ]);
    }
  });

  it('names a metadata key of an error as the client wrote it, and the engine’s fields in snake_case', async () => {
    const { engine } = await openEngine();
    const client = await connect({ engine, principal: { agentId: 'agent-a' } });
    const nul = await call(client, 'mnemo.remember', {
      content: 'x',
      metadata: { sourceInfo: { pageTitle: 'a\u0000b' } },
    });
    expect(nul.body).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: 'metadata.sourceInfo.pageTitle: contains a NUL character',
        field: 'metadata.sourceInfo.pageTitle',
      },
    });
    const blank = await call(client, 'mnemo.recall', { query: 'x', filters: { tags_any: [' '] } });
    expect(blank.body).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: 'filters.tags_any[0]: must not be blank',
        field: 'filters.tags_any[0]',
      },
    });
  });

  it('tells onInternalError nothing of the MnemoErrors the client is answered with', async () => {
    const { engine } = await openEngine();
    const onInternalError = vi.fn();
    const client = await connect({ engine, principal: { agentId: 'agent-a' }, onInternalError });
    expect((await call(client, 'mnemo.remember', { content: ' ' })).body).toMatchObject({
      error: { code: 'INVALID_INPUT' },
    });
    expect((await call(client, 'mnemo.forget', { ids: ['id-999999'] })).body).toMatchObject({
      error: { code: 'NOT_FOUND' },
    });
    // Bad input is the client's business, not a bug for the server log.
    expect(onInternalError).not.toHaveBeenCalled();
  });

  it('refuses a malformed principal when the server is created', async () => {
    const { engine } = await openEngine();
    expect(() => createMcpServer({ engine, principal: { agentId: 'no spaces' } })).toThrow(
      MnemoError,
    );
  });
});
