import type { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStoreOptions } from '../src/index.js';

// createPostgresStore does no I/O: these need no server.
function failure(options: unknown): Partial<MnemoError> | null {
  try {
    createPostgresStore(options as PostgresStoreOptions);
  } catch (error) {
    const { code, message, details } = error as MnemoError;
    return { code, message, details };
  }
  return null;
}

describe('createPostgresStore options', () => {
  it('rejects an option it does not know, before any I/O', () => {
    // A misspelt option was ignored: `schame: 'agent_memory'` put the tables in `mnemo`.
    const url = 'postgres://postgres@127.0.0.1:5432/db';
    expect(failure({ connectionString: url, schame: 'agent_memory' })).toEqual({
      code: 'INVALID_INPUT',
      message: 'schame: is not a known option',
      details: { field: 'schame' },
    });
    expect(failure({ pool: {}, statement_timeout: 1000 })).toEqual({
      code: 'INVALID_INPUT',
      message: 'statement_timeout: is not a known option',
      details: { field: 'statement_timeout' },
    });
    expect(
      failure({
        connectionString: url,
        schema: 'agent_memory',
        vector: 'array',
        vectorDimensions: 384,
        vectorIndex: 'sql',
        lexicalIndex: 'sql',
        prepareStatements: false,
        createSchema: true,
        preloadSearchIndex: true,
        statementTimeoutMs: 1,
        connectionTimeoutMs: 1,
        maxConnections: 1,
      }),
    ).toBeNull();
  });

  it('rejects a preloadSearchIndex that is not a boolean', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/db';
    expect(failure({ connectionString: url, preloadSearchIndex: 'yes' })).toEqual({
      code: 'INVALID_INPUT',
      message: 'preloadSearchIndex: must be a boolean',
      details: { field: 'preloadSearchIndex' },
    });
  });

  it('rejects a pool or connection string that is not one, and a schema of null, before any I/O', () => {
    // `pool: null` got through, and init() connected where pg's defaults (PGHOST…) pointed.
    const pool = 'must be a pg.Pool: an object with connect, query and end methods';
    const url = 'must be a non-empty string';
    const cases: [Record<string, unknown>, string, string][] = [
      [{ pool: null }, 'pool', pool],
      [{ pool: {} }, 'pool', pool],
      [{ pool: 'postgres://x' }, 'pool', pool],
      [{ pool: { connect() {}, query() {} } }, 'pool', pool],
      [{ connectionString: null }, 'connectionString', url],
      [{ connectionString: 42 }, 'connectionString', url],
      [{ connectionString: '' }, 'connectionString', url],
      [
        { connectionString: 'postgres://h/db', schema: null },
        'schema',
        'must match [a-z_][a-z0-9_]{0,62} and not start with pg_',
      ],
    ];
    for (const [options, field, message] of cases) {
      expect(failure(options)).toEqual({
        code: 'INVALID_INPUT',
        message: `${field}: ${message}`,
        details: { field },
      });
    }
    expect(failure({ pool: { connect() {}, query() {}, end() {} } })).toBeNull();
  });

  it('bounds the timeouts by what a Node timer can wait', () => {
    // Node waits 1 ms for a longer timer: every statement timed out at once.
    const url = 'postgres://postgres@127.0.0.1:5432/db';
    for (const key of ['statementTimeoutMs', 'connectionTimeoutMs']) {
      expect(failure({ connectionString: url, [key]: 2 ** 31 })).toEqual({
        code: 'INVALID_INPUT',
        message: `${key}: must be an integer from 1 to 2147483647`,
        details: { field: key },
      });
      expect(failure({ connectionString: url, [key]: 2 ** 31 - 1 })).toBeNull();
    }
  });
});
