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
});
