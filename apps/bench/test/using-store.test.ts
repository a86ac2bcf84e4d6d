import { describe, expect, it } from 'vitest';
import { usingStore } from '../src/shared/stores.js';

function held(fail: { close?: boolean; dispose?: boolean } = {}) {
  const steps: string[] = [];
  return {
    steps,
    close: async () => {
      steps.push('close');
      if (fail.close) throw new Error('close broke');
    },
    dispose: async () => {
      steps.push('dispose');
      if (fail.dispose) throw new Error('dispose broke');
    },
  };
}

describe('usingStore', () => {
  it('closes and removes the store after the body, and returns its result', async () => {
    const store = held();
    const lines: string[] = [];
    const signals = process.listenerCount('SIGINT');
    const result = await usingStore(
      store,
      (line) => lines.push(line),
      async () => {
        expect(process.listenerCount('SIGINT')).toBe(signals + 1);
        store.steps.push('body');
        return 42;
      },
    );
    expect(result).toBe(42);
    expect(store.steps).toEqual(['body', 'close', 'dispose']);
    expect(lines).toEqual([]);
    expect(process.listenerCount('SIGINT')).toBe(signals);
    expect(process.listenerCount('SIGTERM')).toBe(signals);
  });

  it("after a failure, reports cleanup failures and throws the body's error", async () => {
    const store = held({ close: true, dispose: true });
    const lines: string[] = [];
    const signals = process.listenerCount('SIGINT');
    await expect(
      usingStore(
        store,
        (line) => lines.push(line),
        async () => {
          throw new Error('body broke');
        },
      ),
    ).rejects.toThrow('body broke');
    expect(store.steps).toEqual(['close', 'dispose']);
    expect(lines).toEqual([
      'warning: cleaning up failed too: close broke',
      'warning: cleaning up failed too: dispose broke',
    ]);
    expect(process.listenerCount('SIGINT')).toBe(signals);
  });

  it('fails a run whose engine cannot be closed, still removing the store, reporting it once', async () => {
    const store = held({ close: true });
    const lines: string[] = [];
    await expect(
      usingStore(
        store,
        (line) => lines.push(line),
        async () => 1,
      ),
    ).rejects.toThrow('close broke');
    expect(store.steps).toEqual(['close', 'dispose']);
    expect(lines).toEqual([]);
  });

  it('fails a run whose store cannot be removed, without closing or removing it twice', async () => {
    const store = held({ dispose: true });
    const lines: string[] = [];
    await expect(
      usingStore(
        store,
        (line) => lines.push(line),
        async () => 1,
      ),
    ).rejects.toThrow('dispose broke');
    expect(store.steps).toEqual(['close', 'dispose']);
    expect(lines).toEqual([]);
  });

  it('after a successful run whose close and removal both fail, throws the first and reports the second', async () => {
    const store = held({ close: true, dispose: true });
    const lines: string[] = [];
    await expect(
      usingStore(
        store,
        (line) => lines.push(line),
        async () => 1,
      ),
    ).rejects.toThrow('close broke');
    expect(store.steps).toEqual(['close', 'dispose']);
    expect(lines).toEqual(['warning: cleaning up failed too: dispose broke']);
  });
});
