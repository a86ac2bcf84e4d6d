import {
  type DuckDBArrayType,
  DuckDBDataChunk,
  type DuckDBType,
  DuckDBTypeId,
  type DuckDBValue,
} from '@duckdb/node-api';
import { setEmbeddings, setStrings } from './chunks.js';
import { mapDuckDBError } from './errors.js';
import type { Session } from './session.js';

/** Rows per data chunk: DuckDB's vector size, the most one chunk holds. */
const CHUNK_ROWS = 2048;

/** A column to append: its type and one value per row, or a `FLOAT[n]` array's embeddings. */
export type AppendColumn =
  | { type: DuckDBType; values: readonly DuckDBValue[] }
  | { type: DuckDBArrayType; embeddings: readonly (Float32Array | null)[] };

/**
 * Appends rows to `table` through DuckDB's Appender, one data chunk per 2,048
 * rows. `columns` are the table's columns in its declared order, each with
 * its type and one value per row (all the same length); embeddings are
 * copied into the chunk as floats (see `setEmbeddings`).
 *
 * Why not `INSERT … SELECT unnest($list)`: binding a list parameter converts
 * every element to a DuckDB value one by one, which costs about 1.6 ms per
 * 384-float embedding; a data chunk is filled in place (about 40 µs a row).
 * The appender runs in the connection's open transaction, so its rows commit
 * or roll back with everything else the transaction did, and the table's
 * constraints (primary keys) are checked as rows are appended.
 */
export async function appendRows(
  s: Session,
  table: string,
  columns: readonly AppendColumn[],
): Promise<void> {
  const [first] = columns;
  const rows =
    first === undefined ? 0 : 'values' in first ? first.values.length : first.embeddings.length;
  if (rows === 0) return;
  let appender: Awaited<ReturnType<Session['connection']['createAppender']>>;
  try {
    appender = await s.connection.createAppender(table);
  } catch (error) {
    throw mapDuckDBError(error, 'statement');
  }
  try {
    const types = columns.map((column) => column.type);
    for (let start = 0; start < rows; start += CHUNK_ROWS) {
      const count = Math.min(CHUNK_ROWS, rows - start);
      const chunk = DuckDBDataChunk.create(types, count);
      columns.forEach((column, index) => {
        if ('embeddings' in column) {
          setEmbeddings(chunk, index, column.type.length, column.embeddings, start, count);
          return;
        }
        if (column.type.typeId === DuckDBTypeId.VARCHAR) {
          setStrings(chunk, index, column.values as readonly (string | null)[], start, count);
          return;
        }
        const vector = chunk.getColumnVector(index);
        for (let row = 0; row < count; row += 1) {
          vector.setItem(row, column.values[start + row] as DuckDBValue);
        }
        vector.flush();
      });
      appender.appendDataChunk(chunk);
    }
    appender.closeSync();
  } catch (error) {
    try {
      // A failed flush leaves its rows buffered in the appender, and DuckDB flushes them again
      // when the appender is destroyed (by garbage collection, at any later moment): on the
      // writer connection, into whatever transaction is open then, or committing on their own.
      appender.clear();
      appender.closeSync();
    } catch {
      // The append already failed; that error is the one to report.
    }
    throw mapDuckDBError(error, 'statement');
  }
}
