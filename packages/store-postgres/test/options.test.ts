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
});
