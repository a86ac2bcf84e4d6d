// A WebAssembly function that computes many int8 dot products with 128-bit SIMD, for the
// vector side of the in-memory index (see VectorCodes). JavaScript has no SIMD: a plain loop
// over 100,000 codes of 384 bytes took 71–125 ms, this one 7–10 ms on one core. The module is
// assembled here, byte by byte, so nothing is compiled or fetched at build or run time. Its
// memory is shared, so a helper thread (see DotHelper) can take part of a long pass.

import { type DotFunction, DotHelper } from './dot-helper.js';

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

/** Below this many rows a pass runs on the calling thread alone: waking the helper costs more. */
const PARALLEL_ROWS = 8_192;

/** Numbers the kernels of this process, for the helper thread. */
let kernels = 0;

/**
 * A memory to lay rows of int8 codes in, with a query, a list of row
 * numbers and the dot products of the query with those rows. The caller
 * places each where it chose and reads the products.
 *
 * On a machine of more than one core, a pass over many rows is shared with
 * the process's helper thread (see DotHelper; one for every kernel, started
 * by the first long pass and ended when the last kernel using it closes): a
 * pass reads every row's codes (38 MB at 100,000 rows of 384), and one core
 * took 8–9 ms for it when the codes had left the CPU's caches, as they have
 * between one recall and the next. The calling thread takes chunks too and
 * waits only for a chunk the helper has begun, so a busy helper slows
 * nothing down.
 */
export class DotKernel {
  private readonly id = ++kernels;
  private readonly module: object;
  private readonly memory: WasmMemory;
  private readonly run: DotFunction;
  private parallel: boolean;
  /** The helper this kernel registered with, if any (a new one after a restart needs it again). */
  private helper: DotHelper | null = null;

  /** `parallel`: share long passes with the helper thread (default: when the machine has more than one core). */
  constructor(options: { parallel?: boolean } = {}) {
    this.module = new WebAssembly.Module(MODULE);
    this.memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared: true });
    this.run = new WebAssembly.Instance(this.module, { env: { memory: this.memory } }).exports
      .dot as DotFunction;
    this.parallel = options.parallel ?? DotHelper.useful;
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
    const helper = this.parallel && count >= PARALLEL_ROWS ? DotHelper.get() : null;
    if (helper === null) {
      this.run(queryAt, codesAt, width, rowsAt, count, outAt);
      return;
    }
    if (this.helper !== helper) {
      helper.register({ id: this.id, memory: this.memory, module: this.module });
      this.helper = helper;
    }
    helper.run(this.id, this.run, queryAt, codesAt, width, rowsAt, count, outAt);
  }

  /** Leaves the helper thread (which lets this kernel's memory go); later passes run here alone. */
  close(): void {
    this.parallel = false;
    this.helper?.unregister(this.id);
    this.helper = null;
  }
}
