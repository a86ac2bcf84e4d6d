import type { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';

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
