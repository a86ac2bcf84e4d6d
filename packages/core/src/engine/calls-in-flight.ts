import { MnemoError } from '../errors.js';

/**
 * The calls an engine is running, so that `engine.close()` lets them finish
 * before it closes the store. Without it a call made just before `close()`
 * (still embedding, or queued for the next group commit) would fail with
 * `STORE_UNAVAILABLE`, its write lost although the caller made it in time.
 * Shared by every handle and `with()` copy of one engine.
 */
export class CallsInFlight {
  private readonly running = new Set<Promise<unknown>>();
  private closing = false;

  /**
   * Runs `work` as one call of the engine. Once `close()` has been called,
   * `STORE_UNAVAILABLE` without running it.
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) throw new MnemoError('STORE_UNAVAILABLE', 'the engine is closed');
    const call = work();
    this.running.add(call);
    try {
      return await call;
    } finally {
      this.running.delete(call);
    }
  }

  /** Refuses new calls, then resolves once every call already made has settled. */
  async close(): Promise<void> {
    this.closing = true;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
