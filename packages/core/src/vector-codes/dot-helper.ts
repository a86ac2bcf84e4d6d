// The process's one helper thread for long passes of the int8 dot kernel (see DotKernel):
// every kernel's pass runs on the thread that calls it, and the helper takes chunks of it.
// One helper serves every kernel (every store) of the process, since their passes all run on
// the one thread that calls them, one at a time.

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/** The kernel's exported function: dot(query, codes, width, rows, count, out); see DotKernel. */
export type DotFunction = (
  query: number,
  codes: number,
  width: number,
  rows: number,
  count: number,
  out: number,
) => void;

/** A pass is cut into this many chunks, taken by whichever thread is free (at most 255). */
const CHUNKS = 16;

// The words of the control array the two threads share (an Int32Array). AT_GENERATION: the
// number of the current pass (it wakes the helper). AT_NEXT: the pass number << 8 | the next
// chunk to take. AT_DONE: chunks finished. Then the number of chunks, the kernel, the pass's
// arguments, and AT_FAILED if the helper could not compute a chunk it took. `takeChunks` reads
// them by these numbers.
const [
  AT_GENERATION,
  AT_NEXT,
  AT_DONE,
  AT_CHUNKS,
  AT_KERNEL,
  AT_QUERY,
  AT_CODES,
  AT_WIDTH,
  AT_ROWS,
  AT_COUNT,
  AT_OUT,
  AT_FAILED,
] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const CONTROL_WORDS = 12;

/**
 * Takes and computes chunks of pass `pass` until none is left, on whichever
 * thread calls it: the caller's and the helper's. A chunk is taken by
 * compare-and-swap of AT_NEXT, which also carries the pass number, so a
 * helper that wakes late for a finished pass takes nothing of the next one;
 * the kernel and the arguments are read once a chunk is taken, when the
 * caller cannot have moved on. `dotOf` gives the function of a kernel, or
 * undefined for one this thread does not know. The helper runs this
 * function's source text, so it reads nothing but its parameters and
 * globals: the control words by number (see above).
 */
function takeChunks(
  control: Int32Array,
  dotOf: (kernel: number) => DotFunction | undefined,
  pass: number,
): void {
  const tag = (pass & 0x7fffff) << 8;
  for (;;) {
    const next = Atomics.load(control, 1); // AT_NEXT
    const chunk = next & 0xff;
    const chunks = control[3] as number; // AT_CHUNKS
    if ((next & ~0xff) !== tag || chunk >= chunks) return;
    if (Atomics.compareExchange(control, 1, next, next + 1) !== next) continue;
    // From AT_KERNEL, AT_QUERY, AT_CODES, AT_WIDTH, AT_ROWS, AT_COUNT and AT_OUT.
    const at = (word: number) => control[word] as number;
    const size = Math.ceil(at(9) / chunks);
    const start = chunk * size;
    const rows = Math.min(size, at(9) - start);
    try {
      const dot = dotOf(at(4));
      if (dot === undefined) throw new Error('unknown kernel');
      if (rows > 0) dot(at(5), at(6), at(7), at(8) + start * 4, rows, at(10) + start * 4);
    } catch {
      Atomics.store(control, 11, 1); // AT_FAILED
    }
    Atomics.add(control, 2, 1); // AT_DONE
    Atomics.notify(control, 2);
  }
}

// The helper thread: on each wake, learns the kernels registered or closed since (messages
// read synchronously, as the thread never returns to its event loop), then takes chunks.
const HELPER_SOURCE = `'use strict';
const { workerData, parentPort, receiveMessageOnPort } = require('node:worker_threads');
const { control } = workerData;
const kernels = new Map();
const takeChunks = ${takeChunks.toString()};
const dotOf = (kernel) => kernels.get(kernel);
let seen = 0;
for (;;) {
  Atomics.wait(control, ${AT_GENERATION}, seen);
  seen = Atomics.load(control, ${AT_GENERATION});
  for (let m = receiveMessageOnPort(parentPort); m !== undefined; m = receiveMessageOnPort(parentPort)) {
    const { kernel, memory, module } = m.message;
    if (memory === undefined) kernels.delete(kernel);
    else kernels.set(kernel, new WebAssembly.Instance(module, { env: { memory } }).exports.dot);
  }
  takeChunks(control, dotOf, seen);
}
`;

/** What a kernel gives the helper: its shared memory and compiled module, for an instance there. */
export interface HelpedKernel {
  readonly id: number;
  readonly memory: object;
  readonly module: object;
}

/**
 * The helper thread (a `worker_threads` worker, unref'd so it never keeps a
 * process alive), started by the first long pass (`get`) and ended when the
 * last kernel registered with it leaves.
 */
export class DotHelper {
  private static current: DotHelper | null = null;

  /** The process's helper, started if none runs; null if it cannot start. */
  static get(): DotHelper | null {
    if (DotHelper.current === null) {
      try {
        DotHelper.current = new DotHelper();
      } catch {
        return null;
      }
    }
    return DotHelper.current;
  }

  /** Whether passes are worth sharing on this machine: it has more than one core. */
  static readonly useful = availableParallelism() > 1;

  private readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * 4));
  private readonly worker: Worker;
  private readonly kernels = new Set<number>();
  private pass = 0;

  private constructor() {
    this.worker = new Worker(HELPER_SOURCE, { eval: true, workerData: { control: this.control } });
    this.worker.unref();
    // A helper that fails leaves every pass to the calling thread (whose `run` redoes a pass
    // the helper could not finish); the next pass starts a new one.
    this.worker.on('error', () => this.retire());
  }

  /** Makes `kernel` known to the helper thread (before its next pass, as messages are queued at once). */
  register(kernel: HelpedKernel): void {
    if (this.kernels.has(kernel.id)) return;
    this.kernels.add(kernel.id);
    this.worker.postMessage({ kernel: kernel.id, memory: kernel.memory, module: kernel.module });
  }

  /** Forgets `kernel` (the helper drops its instance and memory); the last one ends the helper. */
  unregister(kernel: number): void {
    if (!this.kernels.delete(kernel)) return;
    if (this.kernels.size === 0) {
      this.retire();
      return;
    }
    this.worker.postMessage({ kernel });
    // A wake with no pass, so the helper reads the message now and lets the memory go.
    this.pass = (this.pass + 1) & 0x7fffff;
    Atomics.store(this.control, AT_GENERATION, this.pass);
    Atomics.notify(this.control, AT_GENERATION);
  }

  /**
   * Runs the pass `run(...pass)` of `kernel` (registered) in chunks, on this
   * thread and the helper's; returns once every chunk is done.
   */
  run(kernel: number, run: DotFunction, ...pass: Parameters<DotFunction>): void {
    const [queryAt, codesAt, width, rowsAt, count, outAt] = pass;
    const control = this.control;
    this.pass = (this.pass + 1) & 0x7fffff;
    control[AT_CHUNKS] = CHUNKS;
    control[AT_KERNEL] = kernel;
    control[AT_QUERY] = queryAt;
    control[AT_CODES] = codesAt;
    control[AT_WIDTH] = width;
    control[AT_ROWS] = rowsAt;
    control[AT_COUNT] = count;
    control[AT_OUT] = outAt;
    control[AT_FAILED] = 0;
    Atomics.store(control, AT_DONE, 0);
    Atomics.store(control, AT_NEXT, this.pass << 8);
    Atomics.store(control, AT_GENERATION, this.pass);
    Atomics.notify(control, AT_GENERATION);
    takeChunks(control, () => run, this.pass);
    for (;;) {
      const done = Atomics.load(control, AT_DONE);
      if (done === CHUNKS) break;
      Atomics.wait(control, AT_DONE, done);
    }
    if (control[AT_FAILED] === 1) {
      // The same arguments on this thread: their error, or the products the helper missed.
      run(...pass);
    }
  }

  /** Ends the helper thread; the next pass that wants one starts another. */
  private retire(): void {
    if (DotHelper.current === this) DotHelper.current = null;
    this.kernels.clear();
    void this.worker.terminate();
  }
}
