import { cosineReference } from '@mnemo/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { DotKernel } from '../src/vector-codes/dot-kernel.js';
import { VectorCodes } from '../src/vector-codes/vector-codes.js';

/** A deterministic pseudo-random sequence in [0, 1). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('DotKernel', () => {
  it('computes the int8 dot product of the query with each listed row, at the extremes too', () => {
    const next = random(3);
    const kernel = new DotKernel();
    const width = 400; // 25 blocks of 16
    const rows = 50;
    const [queryAt, codesAt, listAt] = [0, width, width + rows * width];
    const outAt = listAt + rows * 4;
    kernel.reserve(outAt + rows * 4);
    const bytes = new Int8Array(kernel.buffer);
    for (let i = 0; i < width; i += 1) bytes[queryAt + i] = i % 2 === 0 ? 127 : -127;
    for (let row = 0; row < rows; row += 1) {
      for (let i = 0; i < width; i += 1) {
        // Row 0: every product 127²; row 1: every product −127²; the rest at random.
        const code = row === 0 ? bytes[i] : row === 1 ? -(bytes[i] as number) : 0;
        bytes[codesAt + row * width + i] =
          row < 2 ? (code as number) : Math.round(next() * 254) - 127;
      }
    }
    // Every other row, last first, then rows 0 and 1.
    const listed = [...Array.from({ length: 24 }, (_, k) => 49 - 2 * k), 0, 1];
    new Int32Array(kernel.buffer, listAt, listed.length).set(listed);
    kernel.dot(queryAt, codesAt, width, listAt, listed.length, outAt);
    const products = new Int32Array(kernel.buffer, outAt, listed.length);
    for (const [k, row] of listed.entries()) {
      let expected = 0;
      for (let i = 0; i < width; i += 1) {
        expected += (bytes[codesAt + row * width + i] as number) * (bytes[queryAt + i] as number);
      }
      expect(products[k]).toBe(expected);
    }
    expect(products[24]).toBe(127 * 127 * width);
    expect(products[25]).toBe(-127 * 127 * width);
  });

  it('gets the same products when long passes of several kernels share the helper thread', () => {
    const next = random(11);
    const width = 32;
    const rows = 60_000;
    const [queryAt, codesAt, listAt] = [0, width, width + rows * width];
    const outAt = listAt + rows * 4;
    /** A kernel filled with its own random codes, and a check of one pass over `count` listed rows. */
    const kernelOf = (parallel: boolean) => {
      const kernel = new DotKernel({ parallel });
      kernel.reserve(outAt + (rows + 1) * 4);
      const bytes = new Int8Array(kernel.buffer);
      for (let i = 0; i < width + rows * width; i += 1) bytes[i] = Math.round(next() * 254) - 127;
      const list = new Int32Array(kernel.buffer, listAt, rows);
      const out = new Int32Array(kernel.buffer, outAt, rows + 1);
      const pass = (count: number, seed: number): string[] => {
        for (let i = 0; i < count; i += 1) list[i] = (i * 7_919 + seed * 13) % rows;
        out.fill(0x55555555, 0, count + 1);
        kernel.dot(queryAt, codesAt, width, listAt, count, outAt);
        const wrong: string[] = [];
        for (let i = 0; i < count; i += 1) {
          const row = list[i] as number;
          let expected = 0;
          for (let j = 0; j < width; j += 1) {
            expected +=
              (bytes[codesAt + row * width + j] as number) * (bytes[queryAt + j] as number);
          }
          if (out[i] !== expected) wrong.push(`pass ${seed} item ${i}: ${out[i]} != ${expected}`);
        }
        // Nothing is written past the pass's products.
        if (out[count] !== 0x55555555) wrong.push(`pass ${seed} wrote past its ${count} products`);
        return wrong.slice(0, 3);
      };
      return { kernel, pass };
    };
    // Lengths around the threshold and the chunking (16 chunks, the last one short or empty),
    // each over a different list of rows, alternating between two kernels; then one kernel
    // after the other has closed, after it has closed too, and a kernel made after both.
    const passes = [60_000, 8_191, 8_192, 8_193, 16_385, 17, 40_000, 60_000];
    const a = kernelOf(true);
    const b = kernelOf(true);
    const serial = kernelOf(false);
    try {
      for (const [k, count] of passes.entries()) {
        expect(a.pass(count, k)).toEqual([]);
        expect(b.pass(count, k + 100)).toEqual([]);
        expect(serial.pass(count, k + 200)).toEqual([]);
      }
      a.kernel.close();
      expect(b.pass(60_000, 300)).toEqual([]);
      expect(a.pass(60_000, 301)).toEqual([]);
      b.kernel.close();
      expect(b.pass(60_000, 302)).toEqual([]);
      const c = kernelOf(true);
      try {
        expect(c.pass(60_000, 303)).toEqual([]);
      } finally {
        c.kernel.close();
      }
    } finally {
      for (const { kernel } of [a, b, serial]) kernel.close();
    }
  });
});

describe('VectorCodes', () => {
  const dimensions = 40;
  /** Dense vectors of every magnitude, some with one huge value (coded coarsely), some zero. */
  const vectorOf = (next: () => number, i: number): Float32Array => {
    const magnitude = [1, 1e-30, 1e30, 1e-3][i % 4] as number;
    const vector = Float32Array.from({ length: dimensions }, () => (next() - 0.5) * magnitude);
    if (i % 5 === 0) vector[i % dimensions] = 60 * magnitude;
    if (i % 97 === 0) vector.fill(0);
    return vector;
  };

  it('keeps every record of the exact top among the candidates, and leaves out zero vectors and hidden records', () => {
    const next = random(11);
    const codes = new VectorCodes();
    const slots = 600;
    codes.grow(slots);
    const vectors = Array.from({ length: slots }, (_, i) => vectorOf(next, i));
    for (const [slot, vector] of vectors.entries()) codes.set(slot, vector);
    codes.set(7, null);
    const notFinite = Float32Array.from(vectors[8] as Float32Array);
    notFinite[3] = Number.NaN;
    codes.set(8, notFinite);
    const visible = Uint8Array.from({ length: slots }, (_, i) => (i % 6 === 1 ? 0 : 1));
    let kept = 0;
    for (let q = 0; q < 60; q += 1) {
      const query = vectorOf(next, q + 1);
      for (const limit of [1, 5, 20]) {
        const found = codes.candidates(query, visible, slots, limit);
        if (found === null) throw new Error('the codes could not tell');
        const exact = vectors
          .map((vector, slot) => ({ slot, score: cosineReference(vector, query) }))
          .filter(
            ({ slot, score }) =>
              visible[slot] === 1 && slot !== 7 && slot !== 8 && !Number.isNaN(score),
          )
          .sort((a, b) => b.score - a.score || a.slot - b.slot)
          .slice(0, limit);
        expect(exact).toHaveLength(limit);
        for (const { slot } of exact) expect(found.slots).toContain(slot);
        expect(found.slots).toContain(8);
        for (const slot of found.slots) {
          expect(visible[slot]).toBe(1);
          expect(slot === 7 || (slot % 97 === 0 && slot !== 8)).toBe(false);
        }
        // What `settles` promises: the exact top reaches it, every visible record left out is
        // below it, rounded as the stores round.
        const rounded = (score: number) => Math.round(score * 1e10) / 1e10;
        expect(rounded((exact[limit - 1] as { score: number }).score)).toBeGreaterThanOrEqual(
          found.settles,
        );
        for (const [slot, vector] of vectors.entries()) {
          const score = cosineReference(vector, query);
          if (visible[slot] !== 1 || found.slots.includes(slot) || Number.isNaN(score)) continue;
          expect(rounded(score)).toBeLessThan(found.settles);
        }
        kept += found.slots.length;
      }
    }
    // Far fewer than every visible record (else the search would prove nothing).
    expect(kept / (60 * 3)).toBeLessThan(60);
  });

  /** A vector of `dimensions` with the given leading values, the rest `rest`. */
  const vector = (leading: number[], rest = 0) =>
    Float32Array.from({ length: dimensions }, (_, i) => leading[i] ?? rest);
  // Just under half a code step (the largest value 1 codes as 127): these values code as 0.
  const lost = (0.5 / 127) * (1 - 1e-6);

  // Each term of the bound, tight: x codes as (1, 0, …) and the other vector points along what
  // that lost, so the estimate is 0 and the cosine about 0.025, all of it in that term. The
  // rival's cosine is about 0.015, and it codes closely.
  const tight = [
    {
      term: 'what coding lost of the record',
      record: vector([1], lost),
      query: vector([0], 1),
      rival: vector([1, 0.094]),
    },
    {
      term: 'what coding lost of the query',
      record: vector([0], 1),
      query: vector([1], lost),
      rival: vector([0.015 * Math.sqrt(2), -1, 1]),
    },
  ];
  for (const { term, record, query, rival } of tight) {
    it(`keeps a record whose whole cosine lies in the bound's term for ${term}`, () => {
      const codes = new VectorCodes();
      codes.grow(2);
      codes.set(0, record);
      codes.set(1, rival);
      expect(cosineReference(record, query)).toBeCloseTo(0.0246, 4);
      expect(cosineReference(rival, query)).toBeCloseTo(0.015, 3);
      expect(codes.candidates(query, Uint8Array.from([1, 1]), 2, 1)?.slots).toContain(0);
    });
  }

  it('leaves every search to SQL once its memory cannot grow', () => {
    const codes = new VectorCodes();
    codes.grow(2);
    codes.set(0, vector([1]));
    const visible = Uint8Array.from([1, 1]);
    expect(codes.candidates(vector([1]), visible, 1, 1)?.slots).toEqual([0]);
    const reserve = vi.spyOn(DotKernel.prototype, 'reserve').mockImplementation(() => {
      throw new RangeError('WebAssembly.Memory.grow(): Maximum memory size exceeded');
    });
    try {
      codes.grow(1 << 20);
    } finally {
      reserve.mockRestore();
    }
    codes.set(1, vector([0, 1]));
    expect(codes.candidates(vector([1]), visible, 2, 1)).toBeNull();
  });

  it('moves codes with their slot, and answers null for a query of another size or a non-finite one', () => {
    const codes = new VectorCodes();
    codes.grow(4);
    codes.set(0, vector([1]));
    codes.set(1, vector([0, 1]));
    codes.set(3, vector([-1]));
    codes.move(3, 0);
    // Slot 0 now holds (-1, 0, …): its cosine with the query is -1, below slot 1's 0.
    const visible = Uint8Array.from([1, 1, 0, 0]);
    expect(codes.candidates(vector([1]), visible, 4, 1)?.slots).toEqual([1]);
    expect(codes.candidates(new Float32Array(dimensions + 1).fill(1), visible, 4, 1)).toBeNull();
    expect(
      codes.candidates(new Float32Array(dimensions).fill(Number.POSITIVE_INFINITY), visible, 4, 1),
    ).toBeNull();
    expect(new VectorCodes().candidates(vector([1]), visible, 0, 1)).toEqual({
      slots: [],
      settles: Number.NEGATIVE_INFINITY,
    });
  });
});
