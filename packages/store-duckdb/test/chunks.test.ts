import { ARRAY, DuckDBInstance, FLOAT, INTEGER, VARCHAR } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendRows } from '../src/append.js';
import { eachEmbedding, rowObjects } from '../src/chunks.js';
import { Session } from '../src/session.js';

const instance = await DuckDBInstance.create(':memory:');
const session = new Session(await instance.connect());
afterAll(() => instance.closeSync());

/**
 * 5,000 rows (three result chunks): row i holds [i + 1, -(i + 1) / 4, 2^-24 · i] as a
 * FLOAT[3] array, and the list of its first i mod 4 elements; every seventh
 * row's array and every eleventh row's list are NULL.
 */
await session.exec(`CREATE TABLE t AS SELECT i::INTEGER AS i,
    [i + 1, -(i + 1) / 4, i * pow(2, -24)]::FLOAT[3] AS arr,
    ([i + 1, -(i + 1) / 4, i * pow(2, -24)]::FLOAT[])[1:i % 4] AS list,
    'row ' || i AS label, i::BIGINT * 1000 AS stamp, ['a', 'b'][1:i % 3] AS tags,
    [i, i + 1]::DOUBLE[2] AS doubles
  FROM range(5000) r(i)`);
await session.exec('UPDATE t SET arr = NULL WHERE i % 7 = 3');
await session.exec('UPDATE t SET list = NULL WHERE i % 11 = 5');
const ROWS = 'SELECT i, arr, list FROM t ORDER BY i';

function expected(i: number, kind: 'arr' | 'list'): number[] | null {
  if (kind === 'arr' ? i % 7 === 3 : i % 11 === 5) return null;
  const floats = Array.from(Float32Array.from([i + 1, -(i + 1) / 4, i * 2 ** -24]));
  return kind === 'arr' ? floats : floats.slice(0, i % 4);
}

describe('eachEmbedding', () => {
  it.each([
    ['a FLOAT[3] array', 'arr', 1],
    ['a FLOAT[] list', 'list', 2],
  ] as const)(
    'reads every row of %s, NULLs included, as DuckDB stores it',
    async (_name, kind, column) => {
      const read: { i: number; floats: number[] | null }[] = [];
      let chunks = 0;
      await session.eachChunk(ROWS, (chunk) => {
        chunks += 1;
        const ids = chunk.getColumnValues(0) as number[];
        eachEmbedding(chunk, column, (row, embedding) =>
          read.push({
            i: ids[row] as number,
            floats: embedding === null ? null : Array.from(embedding),
          }),
        );
      });
      expect(chunks).toBe(3);
      expect(read).toEqual(
        Array.from({ length: 5000 }, (_, i) => ({ i, floats: expected(i, kind) })),
      );
    },
  );
});

describe('rowObjects', () => {
  it('gives what getRowObjectsJS gives, with each FLOAT array or list as its own Float32Array', async () => {
    const sql = 'SELECT i, arr, label, list, stamp, tags, doubles FROM t ORDER BY i';
    const rows = rowObjects(await session.connection.run(sql));
    const reference = (await session.connection.runAndReadAll(sql)).getRowObjectsJS();
    expect(rows.length).toBe(5000);
    expect(
      rows.map((row) => ({
        ...row,
        arr: row.arr === null ? null : Array.from(row.arr as Float32Array),
        list: row.list === null ? null : Array.from(row.list as Float32Array),
      })),
    ).toEqual(reference);
    expect(rows[4997]).toEqual({
      i: 4997,
      arr: Float32Array.from([4998, -1249.5, 4997 * 2 ** -24]),
      label: 'row 4997',
      list: Float32Array.from([4998]),
      stamp: 4997000n,
      tags: ['a', 'b'],
      doubles: [4997, 4998],
    });
    // Each row's own copy, not a view of its chunk's floats.
    const arr = rows[4997]?.arr as Float32Array;
    expect([arr.byteOffset, arr.buffer.byteLength]).toEqual([0, 12]);
  });
});

describe('setEmbeddings (through appendRows)', () => {
  it('appends FLOAT[3] embeddings across chunks, NULLs included, as they were given', async () => {
    await session.exec('CREATE TABLE w (i INTEGER, e FLOAT[3])');
    const embeddings = Array.from({ length: 5000 }, (_, i) =>
      i % 7 === 3 ? null : Float32Array.from([i + 1, -(i + 1) / 4, i * 2 ** -24]),
    );
    await appendRows(session, 'w', [
      { type: INTEGER, values: embeddings.map((_, i) => i) },
      { type: ARRAY(FLOAT, 3), embeddings },
    ]);
    const rows = await session.all('SELECT i, e FROM w ORDER BY i');
    expect(rows).toEqual(embeddings.map((e, i) => ({ i, e })));
  });

  it('refuses an embedding of another size, and appends nothing', async () => {
    await session.exec('CREATE TABLE v (i INTEGER, e FLOAT[3])');
    const embeddings = [Float32Array.from([1, 2, 3]), Float32Array.from([1, 2, 3, 4])];
    await expect(
      appendRows(session, 'v', [
        { type: INTEGER, values: [0, 1] },
        { type: ARRAY(FLOAT, 3), embeddings },
      ]),
    ).rejects.toThrow('an embedding of 4 floats for a FLOAT[3] column');
    expect(await session.all('SELECT count(*)::INTEGER AS n FROM v')).toEqual([{ n: 0 }]);
  });
});

describe('setStrings (through appendRows)', () => {
  // Around the 12 bytes DuckDB holds inline: ASCII, 2-byte (é), 3-byte (€) and 4-byte (😀)
  // characters, a lone surrogate (stored as U+FFFD), and long strings.
  const samples = [
    '',
    'a',
    'abcdefghijkl',
    'abcdefghijklm',
    'éééééé',
    'ééééééé',
    '€€€€',
    '€€€€€',
    '😀😀😀',
    '😀😀😀😀',
    'a\ud800',
    '019b2f4e-7a1c-7d2e-9f00-0123456789ab',
    'a memory of about forty characters long.',
  ];
  const stored = (text: string) => text.replace('\ud800', '\ufffd');
  // Each sample four rows running: alone, repeated (sharing the first's copy), then NULL or
  // repeated again, then after the NULL or repeated once more.
  const values = Array.from({ length: 5000 }, (_, i) => {
    const group = Math.floor(i / 4);
    return i % 4 === 2 && group % 2 === 0 ? null : (samples[group % samples.length] as string);
  });

  beforeAll(async () => {
    await session.exec('CREATE TABLE s (i INTEGER, v VARCHAR)');
    await appendRows(session, 's', [
      { type: INTEGER, values: values.map((_, i) => i) },
      { type: VARCHAR, values },
    ]);
  });

  it('appends strings of every length across chunks, repeats and NULLs included, as given', async () => {
    const rows = await session.all('SELECT i, v FROM s ORDER BY i');
    expect(rows).toEqual(values.map((v, i) => ({ i, v: v === null ? null : stored(v) })));
  });

  it('stores them so that DuckDB compares and groups them as the strings they are', async () => {
    // Inline strings compare by all their 16 bytes: stray bytes after one would split a group.
    const literals = samples.map((text) => `'${stored(text)}'`).join(', ');
    const rows = await session.all(
      `SELECT p, count(*)::INTEGER AS n FROM s JOIN (SELECT unnest([${literals}]) AS p) ON v = p
       GROUP BY p ORDER BY p`,
    );
    const counts = new Map<string, number>();
    for (const v of values) if (v !== null) counts.set(stored(v), (counts.get(stored(v)) ?? 0) + 1);
    const utf8Order = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
    expect(rows).toEqual([...counts.keys()].sort(utf8Order).map((p) => ({ p, n: counts.get(p) })));
    expect(
      await session.all('SELECT count(DISTINCT v)::INTEGER AS n, count(v)::INTEGER AS m FROM s'),
    ).toEqual([{ n: samples.length, m: values.filter((v) => v !== null).length }]);
  });
});
