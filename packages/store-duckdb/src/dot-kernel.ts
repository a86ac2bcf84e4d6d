// A WebAssembly function that computes many int8 dot products with 128-bit SIMD, for the
// vector side of the in-memory index (see VectorCodes). JavaScript has no SIMD: a plain loop
// over 100,000 codes of 384 bytes took 71–125 ms, this one 7–10 ms on one core. The module is
// assembled here, byte by byte, so nothing is compiled or fetched at build or run time. Its
// memory is shared, so a helper thread (see DotKernel) can take half of a long pass.

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/** Unsigned LEB128, the encoding of every count, index and opcode after a prefix. */
function leb(value: number): number[] {
  const bytes: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (rest !== 0);
  return bytes;
}

const vector = (items: number[][]): number[] => [...leb(items.length), ...items.flat()];
const section = (id: number, bytes: number[]): number[] => [id, ...leb(bytes.length), ...bytes];
const name = (text: string): number[] => [...leb(text.length), ...new TextEncoder().encode(text)];
const simd = (opcode: number): number[] => [0xfd, ...leb(opcode)];

const I32 = 0x7f;
const V128 = 0x7b;
const get = (local: number) => [0x20, local];
const set = (local: number) => [0x21, local];
const tee = (local: number) => [0x22, local];
const i32Const = (value: number) => [0x41, ...leb(value)]; // values below 64 only (signed LEB128)
const I32_ADD = 0x6a;
/** local += by (by below 64, see i32Const). */
const addTo = (local: number, by: number) => [
  ...get(local),
  ...i32Const(by),
  I32_ADD,
  ...set(local),
];
const I32_SUB = 0x6b;
const I32_MUL = 0x6c;
const I32_EQZ = 0x45;
const I32_LT_U = 0x49;
const BLOCK = [0x02, 0x40];
const LOOP = [0x03, 0x40];
const END = 0x0b;
const br = (depth: number) => [0x0c, depth];
const brIf = (depth: number) => [0x0d, depth];
/** v128.load at the address on the stack plus `offset`, 16-byte alignment hint. */
const load = (offset: number) => [...simd(0x00), 4, ...leb(offset)];
const V128_ZERO = [...simd(0x0c), ...new Array<number>(16).fill(0)];
const EXTMUL_LOW = simd(0x9c); // i16x8.extmul_low_i8x16_s
const EXTMUL_HIGH = simd(0x9d); // i16x8.extmul_high_i8x16_s
const I16X8_ADD = simd(0x8e);
const EXTADD_PAIRWISE = simd(0x7e); // i32x4.extadd_pairwise_i16x8_s
const I32X4_ADD = simd(0xae);
const lane = (index: number) => [...simd(0x1b), index]; // i32x4.extract_lane
const I32_STORE = [0x36, 2, 0];
const I32_LOAD = [0x28, 2, 0];

// dot(query, codes, width, rows, count, out): for each of the `count` row numbers (i32) from
// `rows`, the dot product of that row of `width` bytes (a multiple of 16) from `codes` with
// the query's, as an i32 at `out`. Values must lie in [-127, 127]: then two products fit an
// i16 (2 × 127² < 2^15), and a row of up to 65,535 values its i32.
const [QUERY, CODES, WIDTH, ROWS, COUNT, OUT, AT, ROW, END_OF_ROW, SUM, X, Y] = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
];
const body = [
  ...vector([
    [3, I32], // AT (in the query), ROW (in the codes), END_OF_ROW
    [3, V128], // SUM, X, Y
  ]),
  ...BLOCK,
  ...LOOP, // each row
  ...get(COUNT),
  I32_EQZ,
  ...brIf(1),
  ...V128_ZERO,
  ...set(SUM),
  ...get(QUERY),
  ...set(AT),
  ...get(CODES),
  ...get(ROWS),
  ...I32_LOAD,
  ...get(WIDTH),
  I32_MUL,
  I32_ADD,
  ...tee(ROW),
  ...get(WIDTH),
  I32_ADD,
  ...set(END_OF_ROW),
  ...LOOP, // each 16 bytes of the row
  ...get(ROW),
  ...load(0),
  ...set(X),
  ...get(AT),
  ...load(0),
  ...set(Y),
  ...get(X),
  ...get(Y),
  ...EXTMUL_LOW,
  ...get(X),
  ...get(Y),
  ...EXTMUL_HIGH,
  ...I16X8_ADD,
  ...EXTADD_PAIRWISE,
  ...get(SUM),
  ...I32X4_ADD,
  ...set(SUM),
  ...addTo(ROW, 16),
  ...addTo(AT, 16),
  ...get(ROW),
  ...get(END_OF_ROW),
  I32_LT_U,
  ...brIf(0),
  END,
  ...get(OUT),
  ...get(SUM),
  ...lane(0),
  ...get(SUM),
  ...lane(1),
  I32_ADD,
  ...get(SUM),
  ...lane(2),
  I32_ADD,
  ...get(SUM),
  ...lane(3),
  I32_ADD,
  ...I32_STORE,
  ...addTo(OUT, 4),
  ...addTo(ROWS, 4),
  ...get(COUNT),
  ...i32Const(1),
  I32_SUB,
  ...set(COUNT),
  ...br(0),
  END,
  END,
  END,
];

const PAGE = 65_536;
const MAX_PAGES = 65_536;

const MODULE = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
  ...section(1, vector([[0x60, 6, I32, I32, I32, I32, I32, I32, 0]])), // type: 6 × i32 → ()
  // env.memory: a shared memory of 1 to 65,536 pages (4 GiB), given by whoever instantiates.
  ...section(
    2,
    vector([[...name('env'), ...name('memory'), 0x02, 0x03, ...leb(1), ...leb(MAX_PAGES)]]),
  ),
  ...section(3, vector([[0]])), // one function of type 0
  ...section(7, vector([[...name('dot'), 0x00, 0]])),
  ...section(10, vector([[...leb(body.length), ...body]])),
]);

// Node runs WebAssembly, but TypeScript declares it only in the DOM library, which this
// package does not load: what is used of it.
interface WasmMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
    imports: { env: { memory: WasmMemory } },
  ) => { readonly exports: Record<string, unknown> };
};

type DotFunction = (
  query: number,
  codes: number,
  width: number,
  rows: number,
  count: number,
  out: number,
) => void;

/** Below this many rows a pass runs on the calling thread alone: waking the helper costs more. */
const PARALLEL_ROWS = 8_192;
/** A parallel pass is cut into this many chunks, taken by whichever thread is free (at most 255). */
const CHUNKS = 16;

// The words of the control array the two threads share (an Int32Array). AT_GENERATION: the
// number of the current pass (it wakes the helper). AT_NEXT: the pass number << 8 | the next
// chunk to take. AT_DONE: chunks finished. Then the number of chunks, the pass's arguments, and
// AT_FAILED if the helper's function threw. `takeChunks` reads them by these numbers.
const [
  AT_GENERATION,
  AT_NEXT,
  AT_DONE,
  AT_CHUNKS,
  AT_QUERY,
  AT_CODES,
  AT_WIDTH,
  AT_ROWS,
  AT_COUNT,
  AT_OUT,
  AT_FAILED,
] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const CONTROL_WORDS = 11;

/**
 * Takes and computes chunks of pass `pass` until none is left, on whichever
 * thread calls it: the caller's and the helper's. A chunk is taken by
 * compare-and-swap of AT_NEXT, which also carries the pass number, so a helper
 * that wakes late for a finished pass takes nothing of the next one; the
 * arguments are read once a chunk is taken, when the caller cannot have
 * moved on. The helper runs this function's source text, so it reads nothing
 * but its parameters and globals: the control words by number (see above).
 */
function takeChunks(control: Int32Array, dot: DotFunction, pass: number): void {
  const tag = (pass & 0x7fffff) << 8;
  for (;;) {
    const next = Atomics.load(control, 1); // AT_NEXT
    const chunk = next & 0xff;
    const chunks = control[3] as number; // AT_CHUNKS
    if ((next & ~0xff) !== tag || chunk >= chunks) return;
    if (Atomics.compareExchange(control, 1, next, next + 1) !== next) continue;
    const count = control[8] as number; // AT_COUNT
    const size = Math.ceil(count / chunks);
    const start = chunk * size;
    const rows = Math.min(size, count - start);
    try {
      if (rows > 0) {
        // From AT_QUERY, AT_CODES, AT_WIDTH, AT_ROWS and AT_OUT.
        const at = (word: number) => control[word] as number;
        dot(at(4), at(5), at(6), at(7) + start * 4, rows, at(9) + start * 4);
      }
    } catch {
      Atomics.store(control, 10, 1); // AT_FAILED
    }
    Atomics.add(control, 2, 1); // AT_DONE
    Atomics.notify(control, 2);
  }
}

// The helper thread: waits for each new pass and takes chunks of it.
const HELPER_SOURCE = `'use strict';
const { workerData } = require('node:worker_threads');
const { memory, module, control } = workerData;
const dot = new WebAssembly.Instance(module, { env: { memory } }).exports.dot;
const takeChunks = ${takeChunks.toString()};
let seen = 0;
for (;;) {
  Atomics.wait(control, ${AT_GENERATION}, seen);
  seen = Atomics.load(control, ${AT_GENERATION});
  takeChunks(control, dot, seen);
}
`;

/**
 * A memory to lay rows of int8 codes in, with a query, a list of row
 * numbers and the dot products of the query with those rows. The caller
 * places each where it chose and reads the products.
 *
 * On a machine of more than one core, a pass over many rows is shared with
 * a helper thread (a worker started with the kernel, and ended by `close`):
 * a pass reads every row's codes (38 MB at 100,000 rows of 384), and one
 * core took 8–9 ms for it when the codes had left the CPU's caches, as they
 * have between one recall and the next. The calling thread takes chunks too
 * and waits only for a chunk the helper has begun, so a busy helper slows
 * nothing down.
 */
export class DotKernel {
  private readonly memory: WasmMemory;
  private readonly run: DotFunction;
  private readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * 4));
  private helper: Worker | null = null;
  private pass = 0;

  /** `parallel: false` keeps every pass on the calling thread. */
  constructor(options: { parallel?: boolean } = {}) {
    const module = new WebAssembly.Module(MODULE);
    this.memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared: true });
    this.run = new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports
      .dot as DotFunction;
    if (options.parallel ?? availableParallelism() > 1) {
      const helper = new Worker(HELPER_SOURCE, {
        eval: true,
        workerData: { memory: this.memory, module, control: this.control },
      });
      helper.unref();
      // A helper that fails to start leaves every pass to the calling thread.
      helper.on('error', () => {
        if (this.helper === helper) this.helper = null;
      });
      this.helper = helper;
    }
  }

  /** Grows the memory to at least `bytes` (it never shrinks); views taken before are then stale. */
  reserve(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / PAGE));
  }

  get buffer(): SharedArrayBuffer {
    return this.memory.buffer;
  }

  /**
   * Writes at `outAt` the dot products (i32) of the query at `queryAt` with
   * the `count` rows whose numbers (i32) are at `rowsAt`, rows of `width`
   * bytes (a multiple of 16) from `codesAt`.
   */
  dot(
    queryAt: number,
    codesAt: number,
    width: number,
    rowsAt: number,
    count: number,
    outAt: number,
  ): void {
    if (this.helper === null || count < PARALLEL_ROWS) {
      this.run(queryAt, codesAt, width, rowsAt, count, outAt);
      return;
    }
    const control = this.control;
    this.pass = (this.pass + 1) & 0x7fffff;
    control[AT_CHUNKS] = CHUNKS;
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
    takeChunks(control, this.run, this.pass);
    for (;;) {
      const done = Atomics.load(control, AT_DONE);
      if (done === CHUNKS) break;
      Atomics.wait(control, AT_DONE, done);
    }
    if (control[AT_FAILED] === 1) {
      // The same arguments on this thread: their error, or the products the helper missed.
      this.run(queryAt, codesAt, width, rowsAt, count, outAt);
    }
  }

  /** Ends the helper thread; passes run on the calling thread from then on. */
  close(): void {
    const helper = this.helper;
    this.helper = null;
    if (helper !== null) void helper.terminate();
  }
}
