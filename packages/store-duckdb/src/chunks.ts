import {
  type DuckDBDataChunk,
  type DuckDBMaterializedResult,
  type DuckDBType,
  DuckDBTypeId,
  type JS,
  JSDuckDBValueConverter,
} from '@duckdb/node-api';
import duckdb from '@duckdb/node-bindings';

// Rows and embeddings in and out of DuckDB's data chunks, without the client's value-by-value
// conversions where they cost most: the embeddings' floats.

/** A result row: each column's value as `getRowObjectsJS` gives it, embeddings as `Float32Array`s. */
export type Row = Record<string, JS | Float32Array>;

/**
 * The rows of a result as objects, as `getRowObjectsJS` makes them, except
 * that a `FLOAT[n]` array or `FLOAT[]` list column (an embedding) gives each
 * row its own `Float32Array` (see `eachEmbedding`): `getRowObjectsJS`
 * converts those one float at a time, about 50 µs a 384-float row: 0.5 ms
 * of reading a recall's ten rows, 0.9 ms of thirty (a hybrid recall reads
 * two such sets), and 190–280 ms of each 5,000-record page of a scan.
 */
export function rowObjects(result: DuckDBMaterializedResult): Row[] {
  const names = result.columnNames();
  const floats = names.map((_, column) => isFloatVector(result.columnType(column)));
  const rows: Row[] = [];
  const chunks = result.chunkCount;
  for (let index = 0; index < chunks; index += 1) {
    const chunk = result.getChunk(index);
    const first = rows.length;
    const count = chunk.rowCount; // a call into the driver each time it is read
    for (let row = 0; row < count; row += 1) rows.push({});
    names.forEach((name, column) => {
      if (floats[column]) {
        eachEmbedding(chunk, column, (row, embedding) => {
          (rows[first + row] as Row)[name] = embedding === null ? null : embedding.slice();
        });
      } else {
        chunk.convertColumnValues(column, JSDuckDBValueConverter).forEach((value, row) => {
          (rows[first + row] as Row)[name] = value;
        });
      }
    });
  }
  return rows;
}

function isFloatVector(type: DuckDBType): boolean {
  return (
    (type.typeId === DuckDBTypeId.ARRAY || type.typeId === DuckDBTypeId.LIST) &&
    type.valueType.typeId === DuckDBTypeId.FLOAT
  );
}

/**
 * Calls `visit` with the embedding of each row of column `column` of a
 * result chunk, a `FLOAT[n]` array or a `FLOAT[]` list: a view into one
 * `Float32Array` copied out of the chunk at once (valid during the call
 * only), or null for a NULL embedding.
 *
 * Why not `getColumnValues`: it turns each embedding into a `DuckDBArrayValue`
 * of JavaScript numbers, one float at a time, which took 4.6 of the 5.1 s
 * spent loading the 100,000 embeddings of the latency benchmark's file; read
 * as here, loading took 1.1–1.4 s. The elements themselves are not checked for
 * NULL: mnemo only ever stores finite numbers in them.
 */
export function eachEmbedding(
  chunk: DuckDBDataChunk,
  column: number,
  visit: (row: number, embedding: Float32Array | null) => void,
): void {
  const rows = chunk.rowCount;
  if (rows === 0) return;
  // Result chunks hold flat vectors: row i's array at i × size, its list at its entry.
  const vector = duckdb.data_chunk_get_vector(chunk.chunk, column);
  const type = duckdb.vector_get_column_type(vector);
  // The validity mask, or null when all rows are valid: one bit per row in 64-bit words, read
  // byte by byte as on the little-endian machines DuckDB builds for.
  const validity = duckdb.vector_get_validity(
    vector,
    Math.ceil(rows / 64) * 8,
  ) as Uint8Array | null;
  const valid = (row: number) =>
    validity === null || ((validity[row >> 3] as number) & (1 << (row & 7))) !== 0;
  if (duckdb.get_type_id(type) === duckdb.Type.ARRAY) {
    const size = duckdb.array_type_array_size(type);
    const floats = floatsOf(duckdb.array_vector_get_child(vector), rows * size);
    for (let row = 0; row < rows; row += 1) {
      visit(row, valid(row) ? floats.subarray(row * size, (row + 1) * size) : null);
    }
    return;
  }
  // A list: each row's (offset, length) in the child vector, as two unsigned 64-bit integers.
  const entries = duckdb.vector_get_data(vector, rows * 16);
  const bounds = new BigUint64Array(entries.buffer, entries.byteOffset, rows * 2);
  const floats = floatsOf(
    duckdb.list_vector_get_child(vector),
    duckdb.list_vector_get_size(vector),
  );
  for (let row = 0; row < rows; row += 1) {
    if (!valid(row)) {
      visit(row, null);
      continue;
    }
    const offset = Number(bounds[row * 2]);
    visit(row, floats.subarray(offset, offset + Number(bounds[row * 2 + 1])));
  }
}

/**
 * Fills column `column` of a chunk being written, a `FLOAT[size]` array,
 * with `count` embeddings from `embeddings[start]` on: their floats laid end
 * to end and copied into the chunk's child vector at once, a missing one
 * marked NULL. `setItem` on the column's vector takes a `DuckDBArrayValue`
 * of numbers and writes it a float at a time: 32–50 ms for 2,048 rows of
 * 384 floats, against 11–21 ms this way. Every embedding must have `size`
 * floats.
 */
export function setEmbeddings(
  chunk: DuckDBDataChunk,
  column: number,
  size: number,
  embeddings: readonly (Float32Array | null)[],
  start: number,
  count: number,
): void {
  const vector = duckdb.data_chunk_get_vector(chunk.chunk, column);
  const floats = new Float32Array(count * size);
  let mask: ValidityMask = null;
  for (let row = 0; row < count; row += 1) {
    const embedding = embeddings[start + row] ?? null;
    if (embedding === null) {
      mask = markNull(mask, count, row);
      continue;
    }
    if (embedding.length !== size) {
      throw new Error(`an embedding of ${embedding.length} floats for a FLOAT[${size}] column`);
    }
    floats.set(embedding, row * size);
  }
  const child = duckdb.array_vector_get_child(vector);
  duckdb.copy_data_to_vector(child, 0, floats.buffer, 0, floats.byteLength);
  writeValidity(vector, mask);
}

/**
 * The validity mask of a chunk's column being written, as eachEmbedding
 * reads it, or null while every row is valid (a new chunk's default).
 */
type ValidityMask = Uint8Array<ArrayBuffer> | null;

/** `mask` (made all valid for `count` rows if null) with row `row` marked NULL. */
function markNull(mask: ValidityMask, count: number, row: number): Uint8Array<ArrayBuffer> {
  const bits = mask ?? new Uint8Array(Math.ceil(count / 64) * 8).fill(255);
  bits[row >> 3] = (bits[row >> 3] as number) & ~(1 << (row & 7));
  return bits;
}

/** Copies `mask` into the validity of `vector`, unless every row is valid. */
function writeValidity(vector: duckdb.Vector, mask: ValidityMask): void {
  if (mask === null) return;
  duckdb.vector_ensure_validity_writable(vector);
  duckdb.copy_data_to_vector_validity(vector, 0, mask.buffer, 0, mask.byteLength);
}

/** The first `count` floats of a FLOAT vector. */
function floatsOf(vector: duckdb.Vector, count: number): Float32Array {
  const bytes = duckdb.vector_get_data(vector, count * Float32Array.BYTES_PER_ELEMENT);
  return new Float32Array(bytes.buffer, bytes.byteOffset, count);
}

/** Bytes of a `duckdb_string_t`: its length (u32), then its bytes inline if at most 12, else a prefix and a pointer. */
const STRING_BYTES = 16;
const INLINE_BYTES = 12;
const utf8 = new TextEncoder();

// How `setStrings` writes a row: NULL; equal to the row before (a copy of its entry); inline,
// at most 12 ASCII characters or at most 12 UTF-8 bytes otherwise; copied by the driver.
const NULL_ROW = 0;
const REPEATED_ROW = 1;
const ASCII_ROW = 2;
const UTF8_ROW = 3;
const LONG_ROW = 4;

/**
 * Fills column `column` of a chunk being written, a `VARCHAR`, with `count`
 * strings from `values[start]` on (null for NULL). `setItem` and `flush` on
 * the column's vector make one call into the driver per row, which converts
 * the string and copies it. Here a string of at most 12 UTF-8 bytes is
 * written inline in the vector's data, as DuckDB holds it, and a longer one
 * equal to the string of the row before (a record's id on each of its
 * postings) shares that row's copy: only the other long strings go through
 * the driver, and the data is copied into the chunk at once.
 */
export function setStrings(
  chunk: DuckDBDataChunk,
  column: number,
  values: readonly (string | null)[],
  start: number,
  count: number,
): void {
  const vector = duckdb.data_chunk_get_vector(chunk.chunk, column);
  const kinds = new Uint8Array(count);
  let copied = false;
  for (let row = 0; row < count; row += 1) {
    const text = values[start + row] ?? null;
    if (text === null) kinds[row] = NULL_ROW;
    else if (row > 0 && text === values[start + row - 1]) kinds[row] = REPEATED_ROW;
    else {
      const kind = inlineKind(text);
      kinds[row] = kind;
      if (kind === LONG_ROW) {
        duckdb.vector_assign_string_element(vector, row, text);
        copied = true;
      }
    }
  }
  const data = new Uint8Array(count * STRING_BYTES);
  // The driver's copies, as (length, prefix, pointer) entries in the vector's data.
  if (copied) data.set(duckdb.vector_get_data(vector, data.byteLength));
  const view = new DataView(data.buffer);
  let mask: ValidityMask = null;
  for (let row = 0; row < count; row += 1) {
    const at = row * STRING_BYTES;
    const kind = kinds[row];
    if (kind === NULL_ROW) {
      // DuckDB reads nothing of a NULL row's entry; zeroed, the chunk's bytes do not depend on
      // what the vector held.
      data.fill(0, at, at + STRING_BYTES);
      mask = markNull(mask, count, row);
    } else if (kind === REPEATED_ROW) {
      data.copyWithin(at, at - STRING_BYTES, at);
    } else if (kind === ASCII_ROW || kind === UTF8_ROW) {
      // DuckDB compares inline strings by all 16 bytes: the unused ones must be zero.
      const text = values[start + row] as string;
      data.fill(0, at, at + STRING_BYTES);
      let length = text.length;
      if (kind === ASCII_ROW) {
        for (let i = 0; i < length; i += 1) data[at + 4 + i] = text.charCodeAt(i);
      } else {
        const { read, written } = utf8.encodeInto(text, data.subarray(at + 4, at + STRING_BYTES));
        if (read !== text.length) throw new Error(`more than ${INLINE_BYTES} bytes inline`);
        length = written;
      }
      view.setUint32(at, length, true);
    }
  }
  duckdb.copy_data_to_vector(vector, 0, data.buffer, 0, data.byteLength);
  writeValidity(vector, mask);
}

/** How `setStrings` writes `text`: inline (ASCII or not) if it surely takes at most 12 bytes in UTF-8, else by the driver. */
function inlineKind(text: string): number {
  if (text.length > INLINE_BYTES) return LONG_ROW;
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    // At least what the unit takes: 3 bytes for every other one, surrogates included (a pair
    // takes 4, a lone one becomes U+FFFD, 3), so an emoji string may go to the driver instead.
    bytes += unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3;
  }
  return bytes > INLINE_BYTES ? LONG_ROW : bytes === text.length ? ASCII_ROW : UTF8_ROW;
}
