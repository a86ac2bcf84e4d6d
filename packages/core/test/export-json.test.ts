import { describe, expect, it } from 'vitest';
import { exportFromJson, exportToJson, type MemoryRecord } from '../src/index.js';
import { memoryRecord } from '../src/testing/index.js';

const record = (metadata: MemoryRecord['metadata']) => memoryRecord({ metadata });

describe('exportToJson', () => {
  it('writes metadata keys in one order, whatever order a store returned them in', () => {
    // PostgreSQL's jsonb returns keys shorter-first; DuckDB as written.
    const asWritten = record({ z: 1, nested: { b: 1, a: [{ y: 1, x: 2 }] }, s: 'é' });
    const reordered = record({ s: 'é', z: 1, nested: { a: [{ x: 2, y: 1 }], b: 1 } });
    const line = (r: MemoryRecord) => JSON.stringify(exportToJson({ record: r, grants: [] }));
    expect(line(reordered)).toBe(line(asWritten));
    expect(line(asWritten)).toContain(
      '"metadata":{"nested":{"a":[{"x":2,"y":1}],"b":1},"s":"é","z":1}',
    );
    // And it reads back to the same record.
    expect(exportFromJson(JSON.parse(line(asWritten)), 'line 1').record.metadata).toEqual(
      asWritten.metadata,
    );
  });
});
