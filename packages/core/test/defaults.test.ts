import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createUuidV7Generator, MnemoError, noopEmbedder } from '../src/index.js';
import {
  createHashEmbedder,
  createManualClock,
  createSequentialIds,
} from '../src/testing/index.js';

describe('createUuidV7Generator', () => {
  it('returns RFC 9562 version 7 ids that strictly increase, even within one millisecond', () => {
    const next = createUuidV7Generator();
    const ids = Array.from({ length: 10_000 }, next);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(10_000);
    // The 62 random bits differ from id to id, across the refills of the random pool too.
    expect(new Set(ids.map((id) => id.slice(19))).size).toBe(10_000);
    expect([...ids].sort()).toEqual(ids);
    const ms = Number.parseInt(ids[0]?.replace('-', '').slice(0, 12) as string, 16);
    expect(Math.abs(ms - Date.now())).toBeLessThan(60_000);
  });
});

describe('noopEmbedder', () => {
  it('is not semantic and has no dimensions', async () => {
    expect([noopEmbedder.semantic, noopEmbedder.dimensions]).toEqual([false, 0]);
    expect(await noopEmbedder.embed(['a', 'b'])).toEqual([
      new Float32Array(0),
      new Float32Array(0),
    ]);
  });
});

describe('test doubles', () => {
  it('the manual clock moves only when told and throws until set', () => {
    expect(() => createManualClock().now()).toThrow('set() a time first');
    const clock = createManualClock('2026-01-01T00:00:00.000Z');
    clock.advance(1500);
    expect(clock.now()).toEqual(new Date('2026-01-01T00:00:01.500Z'));
    clock.set('2027-05-05T00:00:00.000Z');
    expect(clock.now().toISOString()).toBe('2027-05-05T00:00:00.000Z');
  });

  it('sequential ids count from 1 with a prefix', () => {
    const ids = createSequentialIds('r-');
    expect([ids(), ids(), ids.issued]).toEqual(['r-000001', 'r-000002', 2]);
  });

  it('the hash embedder is deterministic, L2-normalized, and related texts have a positive cosine', async () => {
    const embedder = createHashEmbedder({ dimensions: 32 });
    const [a, b, c] = await embedder.embed([
      'mountain hiking trails',
      'mountain hiking trails',
      'sourdough bread',
    ]);
    expect(a).toEqual(b);
    expect(Math.hypot(...(a as Float32Array))).toBeCloseTo(1, 6);
    const [d] = await embedder.embed(['hiking in the mountain']);
    const dot = (x: Float32Array, y: Float32Array) =>
      x.reduce((sum, v, i) => sum + v * (y[i] as number), 0);
    expect(dot(a as Float32Array, d as Float32Array)).toBeGreaterThan(
      dot(a as Float32Array, c as Float32Array),
    );
    expect(embedder.calls).toEqual([
      ['mountain hiking trails', 'mountain hiking trails', 'sourdough bread'],
      ['hiking in the mountain'],
    ]);
    expect((await embedder.embed(['the of and']))[0]).toEqual(new Float32Array(32));
  });

  it('the hash embedder gives the same bytes as it always has (benchmarks and fixtures depend on them)', async () => {
    const words = ['mountain', 'hiking', 'trails', 'sourdough', 'bread', 'Caroline', 'adoption'];
    words.push('agency', 'painted', 'sunrise', 'lake', '2023', 'über', 'naïve', 'the', 'and');
    words.push('LGBTQ', 'support', 'group', 'running');
    const texts = Array.from({ length: 500 }, (_, i) =>
      Array.from({ length: 1 + (i % 17) }, (_, j) => words[(i * 7 + j * 13) % words.length]).join(
        i % 3 === 0 ? ' ' : ', ',
      ),
    );
    const vectors = await createHashEmbedder({ dimensions: 384 }).embed(texts);
    const hash = createHash('sha256');
    for (const v of vectors) hash.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
    // Computed by the version that normalized with Math.hypot.
    expect(hash.digest('hex')).toBe(
      'd6c8d7e410b74b7d3cf00d9085b407106b16fdde3cecfb134f1d876ea908ec43',
    );
  });
});

describe('MnemoError', () => {
  it('carries a stable code, details and cause, and is recognized across package copies', () => {
    const cause = new Error('driver');
    const error = new MnemoError('STORE_UNAVAILABLE', 'down', { cause, details: { host: 'x' } });
    expect([error.code, error.message, error.cause, error.details, error.name]).toEqual([
      'STORE_UNAVAILABLE',
      'down',
      cause,
      { host: 'x' },
      'MnemoError',
    ]);
    expect(MnemoError.isInstance(error)).toBe(true);
    expect(MnemoError.hasCode(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect(MnemoError.hasCode(error, 'NOT_FOUND')).toBe(false);
    expect(MnemoError.isInstance(new Error('x'))).toBe(false);
    const foreign = Object.assign(new Error('copy'), {
      [Symbol.for('@mnemo/core/MnemoError')]: true,
    });
    expect(MnemoError.isInstance(foreign)).toBe(true);
  });
});
