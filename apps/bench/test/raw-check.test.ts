import { describe, expect, it } from 'vitest';
import { expectRows, type Stored, sampleIds } from '../src/remember/raw.js';

const rows = {
  texts: ['a', 'b', 'c', 'd'],
  vectors: [0.1, 0.2, 0.3, 0.4].map((x) => new Float32Array([x, -x, 1 / 3])),
};
/** Rows 0, 2 and 3 read back as PostgreSQL prints reals: the shortest decimal of each float. */
const stored = (): Stored => ({
  count: 4,
  rows: [0, 2, 3].map((id) => ({
    id,
    content: rows.texts[id] as string,
    embedding: Array.from(rows.vectors[id] as Float32Array, (x) => Number(x.toPrecision(9))),
  })),
});

describe('the raw baselines read their tables back', () => {
  it('samples the first, middle and last row', () => {
    expect(sampleIds(4)).toEqual([0, 2, 3]);
    expect(sampleIds(2)).toEqual([0, 1]);
    expect(sampleIds(1)).toEqual([0]);
  });

  it('accepts a table holding every row, with each sampled float as written', () => {
    expect(() => expectRows('batch', stored(), rows, 4)).not.toThrow();
  });

  it('fails on a missing row, a changed text or a float one step off', () => {
    expect(() => expectRows('batch', { ...stored(), count: 3 }, rows, 4)).toThrow(
      'raw batch: the table holds 3 rows, expected 4',
    );
    const text = stored();
    (text.rows[1] as Stored['rows'][number]).content = 'x';
    const float = stored();
    const embedding = [...(float.rows[2] as Stored['rows'][number]).embedding];
    const bits = new DataView(new ArrayBuffer(4));
    bits.setFloat32(0, embedding[1] as number);
    bits.setInt32(0, bits.getInt32(0) + 1);
    embedding[1] = bits.getFloat32(0);
    (float.rows[2] as Stored['rows'][number]).embedding = embedding;
    const shifted = stored();
    shifted.rows[1] = { ...(shifted.rows[1] as Stored['rows'][number]), id: 1 };
    for (const wrong of [text, float, shifted]) {
      expect(() => expectRows('sequential', wrong, rows, 4)).toThrow(
        'raw sequential: rows 0, 2, 3 do not hold the texts and vectors written',
      );
    }
  });
});
