import { describe, expect, it } from 'vitest';
import { unpackArray, unpackVector } from '../src/binary.js';

// The binary forms PostgreSQL sends (`vector_send`, `array_send` of a `real[]`), built by hand
// and placed at an odd offset of a larger buffer, as the driver's row buffers place them.

const VALUES = [1.5, -0.1, 3.4028234663852886e38, 1.401298464324817e-45, 0, -0];

function atOddOffset(bytes: Buffer): Buffer {
  const larger = Buffer.alloc(bytes.length + 3);
  bytes.copy(larger, 3);
  return larger.subarray(3);
}

function vectorSend(values: readonly number[]): Buffer {
  const bytes = Buffer.alloc(4 + 4 * values.length);
  bytes.writeInt16BE(values.length, 0);
  for (const [i, value] of values.entries()) bytes.writeFloatBE(value, 4 + 4 * i);
  return atOddOffset(bytes);
}

function arraySend(values: readonly number[]): Buffer {
  if (values.length === 0) return atOddOffset(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 188]));
  const bytes = Buffer.alloc(20 + 8 * values.length);
  bytes.writeInt32BE(1, 0); // dimensions
  bytes.writeInt32BE(0, 4); // no NULL element
  bytes.writeInt32BE(700, 8); // float4
  bytes.writeInt32BE(values.length, 12);
  bytes.writeInt32BE(1, 16); // lower bound
  for (const [i, value] of values.entries()) {
    bytes.writeInt32BE(4, 20 + 8 * i);
    bytes.writeFloatBE(value, 24 + 8 * i);
  }
  return atOddOffset(bytes);
}

describe('binary embeddings', () => {
  it('decodes a vector_send value to the exact float32s', () => {
    const decoded = unpackVector(vectorSend(VALUES));
    expect(decoded).toEqual(Float32Array.from(VALUES));
    expect(Object.is(decoded[5], -0)).toBe(true);
    expect(unpackVector(vectorSend([]))).toEqual(new Float32Array(0));
  });

  it('decodes an array_send value of a real[] to the exact float32s', () => {
    expect(unpackArray(arraySend(VALUES))).toEqual(Float32Array.from(VALUES));
    expect(unpackArray(arraySend([]))).toEqual(new Float32Array(0));
  });
});
