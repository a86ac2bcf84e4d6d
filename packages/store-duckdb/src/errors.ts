import { MnemoError } from '@mnemo/core';

/** The `details` of the error for a file another store has open, in this process or another. */
export const FILE_IN_USE = Object.freeze({ reason: 'file_in_use' });

/**
 * The one place DuckDB errors become `MnemoError`s. DuckDB throws plain
 * `Error`s whose message starts with the error class ("IO Error: …").
 */
export function mapDuckDBError(error: unknown, action: string): MnemoError {
  if (MnemoError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/Could not set lock on file|Conflicting lock is held/i.test(message)) {
    return new MnemoError(
      'STORE_UNAVAILABLE',
      `DuckDB: the database file is held by another process (a DuckDB file has one writing process); ${action} failed`,
      { cause: error, details: FILE_IN_USE },
    );
  }
  if (
    /^(IO|Connection|Interrupt|Out of Memory|Fatal) Error/i.test(message) ||
    /database has been invalidated/i.test(message)
  ) {
    return new MnemoError('STORE_UNAVAILABLE', `DuckDB: ${action} failed: ${firstLine(message)}`, {
      cause: error,
    });
  }
  return new MnemoError('INTERNAL', `DuckDB: ${action} failed: ${firstLine(message)}`, {
    cause: error,
  });
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}

export function storeClosed(): MnemoError {
  return new MnemoError(
    'STORE_UNAVAILABLE',
    'DuckDB store is not open: call init() first (or it was closed)',
  );
}
