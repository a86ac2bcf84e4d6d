import { DuckDBInstance } from '@duckdb/node-api';
import { MnemoError } from '@mnemo/core';
import { afterAll, describe, expect, it } from 'vitest';
import { mapDuckDBError } from '../src/errors.js';
import { Session } from '../src/session.js';

const instance = await DuckDBInstance.create(':memory:');
const session = new Session(await instance.connect());
afterAll(() => instance.closeSync());

describe('mapDuckDBError', () => {
  it.each([
    ['IO Error: Could not write file "x.duckdb": No space left on device'],
    ['Connection Error: Connection was never established or has been closed already'],
    ['Interrupt Error: Interrupted!'],
    ['Out of Memory Error: failed to allocate data of size 16.0 MiB (1.9 GiB/2.0 GiB used)'],
    ['FATAL Error: Failed to create checkpoint because of error: Could not write file'],
    [
      'Invalid Input Error: Attempting to execute an unsuccessful or closed pending query result\nError: database has been invalidated because of a previous fatal error.',
    ],
  ])('makes %j STORE_UNAVAILABLE, naming the action and the first line', (message) => {
    const mapped = mapDuckDBError(new Error(message), 'statement');
    expect([mapped.code, mapped.message]).toEqual([
      'STORE_UNAVAILABLE',
      `DuckDB: statement failed: ${message.split('\n')[0]}`,
    ]);
  });

  it.each([
    ['IO Error: Could not set lock on file "/data/x.duckdb": Conflicting lock is held in node'],
    ['IO Error: Conflicting lock is held in /usr/bin/node (PID 4242)'],
  ])('makes %j the file held by another process', (message) => {
    const cause = new Error(message);
    const mapped = mapDuckDBError(cause, 'opening x.duckdb');
    expect([mapped.code, mapped.message, mapped.details, mapped.cause]).toEqual([
      'STORE_UNAVAILABLE',
      'DuckDB: the database file is held by another process (a DuckDB file has one writing process); opening x.duckdb failed',
      { reason: 'file_in_use' },
      cause,
    ]);
  });

  it('makes any other DuckDB error INTERNAL, with its first line only, and passes a MnemoError through', async () => {
    const error = await session.exec('SELECT * FROM missing_table').then(
      () => null,
      (e: MnemoError) => e,
    );
    expect([error?.code, error?.message]).toEqual([
      'INTERNAL',
      'DuckDB: statement failed: Catalog Error: Table with name missing_table does not exist!',
    ]);
    // An error class named further into the message is not the error's class.
    expect(
      mapDuckDBError(new Error('Binder Error: column "IO Error" not found'), 'query'),
    ).toMatchObject({
      code: 'INTERNAL',
      message: 'DuckDB: query failed: Binder Error: column "IO Error" not found',
    });
    expect(mapDuckDBError('Interrupt Error: a string', 'query')).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: 'DuckDB: query failed: Interrupt Error: a string',
    });
    const own = new MnemoError('NOT_FOUND', 'kept');
    expect(mapDuckDBError(own, 'query')).toBe(own);
  });
});
