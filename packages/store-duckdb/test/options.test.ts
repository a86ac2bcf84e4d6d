import type { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { createDuckDBStore, type DuckDBStoreOptions } from '../src/index.js';

/** The error `fn` throws or rejects with, as `{ code, message, details }`; null if none. */
async function failure(fn: () => unknown): Promise<Partial<MnemoError> | null> {
  try {
    await fn();
  } catch (error) {
    const { code, message, details } = error as MnemoError;
    return { code, message, details };
  }
  return null;
}

describe('createDuckDBStore options', () => {
  it('rejects an option it does not know, before any I/O', async () => {
    // A misspelt option was ignored: `searchindex: 'sql'` kept the index in memory.
    const options = { path: ':memory:', searchindex: 'sql' } as unknown as DuckDBStoreOptions;
    expect(await failure(() => createDuckDBStore(options))).toEqual({
      code: 'INVALID_INPUT',
      message: 'searchindex: is not a known option',
      details: { field: 'searchindex' },
    });
  });

  it('rejects a config that is not an object of settings', async () => {
    for (const config of ['threads=2', ['threads'], null]) {
      const options = { path: ':memory:', config } as unknown as DuckDBStoreOptions;
      expect(await failure(() => createDuckDBStore(options))).toEqual({
        code: 'INVALID_INPUT',
        message: 'config: must be an object of DuckDB settings',
        details: { field: 'config' },
      });
    }
  });

  it('rejects a maxReaders that is not an integer ≥ 0', async () => {
    for (const maxReaders of [-1, 1.5, Number.NaN, '4']) {
      const options = { path: ':memory:', maxReaders } as unknown as DuckDBStoreOptions;
      expect(await failure(() => createDuckDBStore(options))).toEqual({
        code: 'INVALID_INPUT',
        message: 'maxReaders: must be an integer ≥ 0',
        details: { field: 'maxReaders' },
      });
    }
    for (const maxReaders of [0, 1, 4]) {
      const store = createDuckDBStore({ path: ':memory:', maxReaders });
      await store.init();
      await store.close();
    }
  });

  it('makes a config that DuckDB refuses INVALID_INPUT naming the setting, not INTERNAL', async () => {
    const init = (config: Record<string, string>) => async () => {
      const store = createDuckDBStore({ path: ':memory:', config });
      try {
        await store.init();
      } finally {
        await store.close();
      }
    };
    expect(await failure(init({ threads: '2', memory_limit: 'lots' }))).toEqual({
      code: 'INVALID_INPUT',
      message: 'config.memory_limit: DuckDB refused the setting: Failed to set config',
      details: { field: 'config.memory_limit' },
    });
    expect(await failure(init({ no_such_setting: '1' }))).toEqual({
      code: 'INVALID_INPUT',
      message:
        'config.no_such_setting: DuckDB refused the setting: Invalid Input Error: The following options were not recognized: no_such_setting',
      details: { field: 'config.no_such_setting' },
    });
    expect(await failure(init({ threads: '2', memory_limit: '1GB' }))).toBeNull();
  });
});
