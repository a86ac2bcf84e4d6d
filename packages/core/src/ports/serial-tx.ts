import type { StoreTx } from './memory-store.js';

/**
 * For store implementers: `tx` with its calls run one after another, in call
 * order, even when a transaction callback starts several at once
 * (`Promise.all([tx.touch(a), tx.touch(b)])`). A store runs a transaction's
 * statements on one connection, one at a time, and must not commit or roll
 * back while one of its calls is still running, or what that call does next
 * lands outside the transaction. `settled` resolves once every call made so
 * far has finished: await it before COMMIT or ROLLBACK.
 */
export function serialTx(tx: StoreTx): { tx: StoreTx; settled: () => Promise<void> } {
  let tail: Promise<unknown> = Promise.resolve();
  const serial: Record<string, unknown> = {};
  for (const [name, call] of Object.entries(tx) as [string, (...args: unknown[]) => unknown][]) {
    serial[name] = (...args: unknown[]) => {
      const run = tail.then(() => call(...args));
      tail = run.catch(() => undefined);
      return run;
    };
  }
  return { tx: serial as unknown as StoreTx, settled: () => tail.then(() => undefined) };
}
