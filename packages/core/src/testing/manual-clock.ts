import type { Clock } from '../ports/clock.js';

export interface ManualClock extends Clock {
  /** Sets the current instant. */
  set(at: Date | string): void;
  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void;
}

/**
 * A clock that moves only when told to. Without a start instant it is
 * unconfigured and `now()` throws, so a test never depends on real time by accident.
 */
export function createManualClock(start?: Date | string): ManualClock {
  let current: number | null = start === undefined ? null : new Date(start).getTime();
  return {
    now() {
      if (current === null) throw new Error('manual clock: set() a time first');
      return new Date(current);
    },
    set(at) {
      current = new Date(at).getTime();
    },
    advance(ms) {
      if (current === null) throw new Error('manual clock: set() a time first');
      current += ms;
    },
  };
}
