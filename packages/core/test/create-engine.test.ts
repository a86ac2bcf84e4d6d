import { describe, expect, it } from 'vitest';
import { createEngine, type MemoryStore } from '../src/index.js';

const store = { capabilities: { name: 'unused', multiProcess: false } } as unknown as MemoryStore;

describe('createEngine', () => {
  it('requires a store and validates limits and lane weights, with no I/O', () => {
    expect(() => createEngine(undefined as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => createEngine({} as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => createEngine({ store, limits: { maxTags: 0 } })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => createEngine({ store, laneWeights: { recency: -1 } })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    const engine = createEngine({ store });
    expect([engine.experienceMemory, engine.readAuditing, engine.embedder.semantic]).toEqual([
      false,
      true,
      false,
    ]);
    const changed = engine.with({ experienceMemory: true, readAuditing: false });
    expect([changed.experienceMemory, changed.readAuditing, changed.store]).toEqual([
      true,
      false,
      store,
    ]);
    expect(engine.experienceMemory).toBe(false);
  });

  it('rejects misspelt or mistyped options, so a typo never silently changes behaviour', () => {
    const cases: [() => unknown, string][] = [
      [
        () => createEngine({ store, experienceMemory: 'false' } as never),
        'options.experienceMemory',
      ],
      [() => createEngine({ store, readAuditing: 'no' } as never), 'options.readAuditing'],
      [
        () => createEngine({ store, experienceMemmory: true } as never),
        'options.experienceMemmory',
      ],
      [() => createEngine({ store, limits: { maxTag: 3 } } as never), 'options.limits.maxTag'],
      [
        () => createEngine({ store, laneWeights: { lexcal: 1 } } as never),
        'options.laneWeights.lexcal',
      ],
      [() => createEngine({ store }).with({ readAuditing: 0 } as never), 'options.readAuditing'],
      [() => createEngine({ store }).with({ readAudit: false } as never), 'options.readAudit'],
      [() => createEngine({ store }).as('a', { org: 'o1' } as never), 'options.org'],
      [() => createEngine({ store }).as('a', 'o1' as never), 'options'],
    ];
    for (const [call, field] of cases) {
      expect(call).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', details: { field } }));
    }
    const engine = createEngine({ store, experienceMemory: undefined, readAuditing: false });
    expect([engine.experienceMemory, engine.readAuditing]).toEqual([false, false]);
    expect(engine.as('a', { orgId: null as never }).principal).toEqual({
      agentId: 'a',
      orgId: null,
    });
  });

  it('rejects an embedder the engine cannot drive, which would lose writes silently', () => {
    const embed = async (texts: readonly string[]) => texts.map(() => new Float32Array(4));
    const valid = { dimensions: 4, semantic: true, maxBatchSize: 8, embed };
    const cases: [unknown, string][] = [
      // Without a batch size, remember resolved to undefined and wrote nothing.
      [{ dimensions: 4, semantic: true, embed }, 'options.embedder.maxBatchSize'],
      [{ ...valid, maxBatchSize: Number.NaN }, 'options.embedder.maxBatchSize'],
      [{ ...valid, maxBatchSize: 0 }, 'options.embedder.maxBatchSize'],
      // A count of texts: a fraction would make batches of varying sizes above it.
      [{ ...valid, maxBatchSize: 2.5 }, 'options.embedder.maxBatchSize'],
      [{ ...valid, semantic: 'false' }, 'options.embedder.semantic'],
      [{ ...valid, embed: undefined }, 'options.embedder.embed'],
      [null, 'options.embedder'],
    ];
    for (const [embedder, field] of cases) {
      expect(() => createEngine({ store, embedder: embedder as never })).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', details: { field } }),
      );
    }
    // No batch limit at all is a limit the engine can use.
    for (const maxBatchSize of [1, 64, Number.MAX_SAFE_INTEGER, Number.POSITIVE_INFINITY]) {
      expect(
        createEngine({ store, embedder: { ...valid, maxBatchSize } }).embedder.maxBatchSize,
      ).toBe(maxBatchSize);
    }
  });

  it('rejects a clock or id generator that is not one, instead of a TypeError at the first write', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ clock: () => new Date() }, 'options.clock'],
      [{ clock: null }, 'options.clock'],
      [{ ids: 'uuid' }, 'options.ids'],
      [{ ids: null }, 'options.ids'],
    ];
    for (const [option, field] of cases) {
      expect(() => createEngine({ store, ...option } as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', details: { field } }),
      );
    }
  });

  it("binds a handle's principal for good: assigning or mutating it throws", () => {
    const handle = createEngine({ store }).as('agent-a');
    expect(() => {
      (handle as { principal: unknown }).principal = { agentId: 'agent-b', orgId: null };
    }).toThrow(TypeError);
    expect(() => {
      (handle.principal as { agentId: string }).agentId = 'agent-b';
    }).toThrow(TypeError);
    expect(() =>
      Object.defineProperty(handle, 'principal', { value: { agentId: 'agent-b', orgId: null } }),
    ).toThrow(TypeError);
    expect(handle.principal).toEqual({ agentId: 'agent-a', orgId: null });
  });

  it('keeps every option with() leaves out, and bounds lane weights and page sizes exactly', () => {
    const engine = createEngine({
      store,
      readAuditing: false,
      experienceSignature: 'enriched',
      // A weight of 0 turns a lane off: allowed, unlike a negative one.
      laneWeights: { semantic: 0, recency: 0 },
    });
    const changed = engine.with({ experienceMemory: true });
    expect([changed.experienceMemory, changed.readAuditing, changed.experienceSignature]).toEqual([
      true,
      false,
      'enriched',
    ]);
    // Checked when called, before the generator reads anything.
    for (const pageSize of [0, 1.5]) {
      expect(() => engine.exportRecords({ pageSize })).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', details: { field: 'pageSize' } }),
      );
    }
    expect(typeof engine.exportRecords({ pageSize: 1 }).next).toBe('function');
  });
});

describe('operator calls', () => {
  it('reject a misspelt option before touching the store, so a typo never skips a check', async () => {
    // The store has no methods: any read would fail with a TypeError instead.
    const engine = createEngine({ store });
    const field = (name: string) => ({ code: 'INVALID_INPUT', details: { field: name } });
    // `knownHeads` misspelt: the truncation check it asks for would silently not run.
    await expect(engine.verifyAudit({ knownHead: [] } as never)).rejects.toMatchObject(
      field('options.knownHead'),
    );
    await expect(engine.verifyRecords({ pagesize: 10 } as never)).rejects.toMatchObject(
      field('options.pagesize'),
    );
    await expect(engine.purgeExpired({ pagesize: 10 } as never)).rejects.toMatchObject(
      field('options.pagesize'),
    );
    await expect(engine.verifyAudit(null as never)).rejects.toMatchObject(field('options'));
    expect(() => engine.exportRecords({ pagesize: 10 } as never)).toThrow(
      expect.objectContaining(field('options.pagesize')),
    );
    expect(() => engine.exportRecords('all' as never)).toThrow(
      expect.objectContaining(field('options')),
    );
  });

  it('bound every page size to 1..10,000 before touching the store: a page is held in memory', async () => {
    const engine = createEngine({ store });
    const refused = {
      code: 'INVALID_INPUT',
      message: 'pageSize: must be an integer from 1 to 10000',
      details: { field: 'pageSize' },
    };
    // 1e21 reached DuckDB as a bigint out of range: INTERNAL instead of INVALID_INPUT.
    for (const pageSize of [0, 1.5, 10_001, 1e21, '10' as never]) {
      await expect(engine.verifyAudit({ pageSize })).rejects.toMatchObject(refused);
      await expect(engine.verifyRecords({ pageSize })).rejects.toMatchObject(refused);
      await expect(engine.purgeExpired({ pageSize })).rejects.toMatchObject(refused);
      expect(() => engine.exportRecords({ pageSize })).toThrow(expect.objectContaining(refused));
    }
    expect(typeof engine.exportRecords({ pageSize: 10_000 }).next).toBe('function');
  });
});
