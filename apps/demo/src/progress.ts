/** Where the demo reports what it is doing (stderr by default; the report itself goes to stdout). */
export interface Progress {
  /** A status line that the next `update` replaces (on a terminal) or follows (elsewhere). */
  update(line: string): void;
  /** A line that stays. */
  line(line: string): void;
}

/** Progress on `stream`: updates rewrite one line on a terminal and are printed one per line otherwise. */
export function createProgress(stream: NodeJS.WritableStream & { isTTY?: boolean }): Progress {
  let pending = false;
  const settle = () => {
    if (pending) stream.write('\n');
    pending = false;
  };
  return {
    update(line) {
      if (stream.isTTY === true) {
        stream.write(`\r${line}\u001b[K`);
        pending = true;
      } else {
        stream.write(`${line}\n`);
      }
    },
    line(line) {
      settle();
      stream.write(`${line}\n`);
    },
  };
}

/** Progress that goes nowhere (tests, library use). */
export const silentProgress: Progress = Object.freeze({ update() {}, line() {} });
