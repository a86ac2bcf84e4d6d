import { DotKernel } from './dot-kernel.js';

/**
 * How far below the `limit`-th lower bound a record's upper bound may be and
 * still be a candidate. The bounds are exact in real arithmetic; this covers
 * what doubles lose computing them (about 1e-15 here) and in DuckDB's cosine
 * (as much), and the rounding of scores to 10 decimals, after which a record
 * up to 1e-10 below the `limit`-th can tie with it and win on its id.
 */
const SLACK = 1e-9;

/** More candidates than this, and the SQL query ranks instead (many near-ties). */
const MOST_CANDIDATES = 2_048;

/** Int8 codes of a vector: the scale, the codes and the norms the bounds need. */
interface Coded {
  /** The vector's largest magnitude / 127, so each value is about code × scale. */
  scale: number;
  norm: number;
  /** Norm of the coded vector (codes × scale), and of what coding lost (vector − coded). */
  codedNorm: number;
  lossNorm: number;
}

/** Writes the int8 codes of `vector` into `codes`, or returns null for a zero or non-finite vector. */
function encode(vector: ArrayLike<number>, codes: Int8Array): Coded | null {
  let largest = 0;
  let squares = 0;
  for (let i = 0; i < vector.length; i += 1) {
    const x = vector[i] as number;
    squares += x * x;
    largest = Math.max(largest, Math.abs(x));
  }
  const norm = Math.sqrt(squares);
  if (!(norm > 0 && Number.isFinite(norm))) return null;
  const scale = largest / 127;
  let coded = 0;
  let lost = 0;
  for (let i = 0; i < vector.length; i += 1) {
    const x = vector[i] as number;
    const code = Math.round(x / scale);
    codes[i] = code;
    coded += code * scale * (code * scale);
    lost += (x - code * scale) * (x - code * scale);
  }
  return { scale, norm, codedNorm: Math.sqrt(coded), lossNorm: Math.sqrt(lost) };
}

/** The slots that may be in a search's top, and what proves the rest are not (see `candidates`). */
export interface Candidates {
  readonly slots: number[];
  /**
   * Every marked slot left out scores below this, after rounding to 10
   * decimals: the `limit`-th best lower bound less half the slack, or
   * -Infinity when fewer than `limit` visible slots are coded. When the
   * marked slots are exactly the visible ones, the candidates' `limit`-th
   * exact score always reaches it;
   * when they are more (a store that checks visibility in SQL), a
   * `limit`-th exact score among the visible candidates at or above it
   * proves their top is the exact top.
   */
  readonly settles: number;
}

/** What a vector search reads of one slot: a coded vector, none (null or zero), or one that cannot be coded. */
const NONE = 0;
const CODED = 1;
const UNCODED = 2;

/**
 * Every indexed record's embedding as int8 codes (one byte a dimension, a
 * quarter of its FLOATs), by slot, to find the few records that can be in a
 * vector search's top without reading the embeddings.
 *
 * For a record x and query q with codes x̂ and q̂ (each value rounded to its
 * vector's largest magnitude / 127), x·q = x̂·q̂ + x̂·(q − q̂) + (x − x̂)·q,
 * so by Cauchy–Schwarz the cosine lies within
 * (‖x̂‖·‖q − q̂‖ + ‖x − x̂‖·‖q‖) / (‖x‖·‖q‖) of x̂·q̂ / (‖x‖·‖q‖). The integer
 * products x̂·q̂ of the visible records take a SIMD pass (see DotKernel); a
 * record is a candidate unless its upper bound is below the `limit`-th best
 * lower bound.
 * The candidates therefore hold the exact top, which DuckDB then scores as
 * the SQL query does. At 100,000 records of 384 dimensions from the hash
 * embedder, a search of 10 or 30 kept 40 candidates at the median, 120 at
 * most, over 200 questions.
 */
export class VectorCodes {
  private readonly kernel = new DotKernel();
  private dimensions = 0;
  /** Bytes per row of codes: the dimensions rounded up to 16. */
  private width = 0;
  private capacity = 0;
  private kinds = new Uint8Array(0);
  /** By slot: scale / norm, coded norm / norm, lost norm / norm (see `candidates`). */
  private scales = new Float64Array(0);
  private codedNorms = new Float64Array(0);
  private lossNorms = new Float64Array(0);
  /**
   * Set when the codes outgrew what a WebAssembly memory can hold (4 GiB:
   * about 10 million records of 384 dimensions): from then on every search
   * is left to SQL.
   */
  private full = false;

  /** Ends the kernel's helper thread (see DotKernel). */
  close(): void {
    this.kernel.close();
  }

  /** Makes room for `capacity` slots; slots keep their codes. */
  grow(capacity: number): void {
    if (capacity <= this.capacity) return;
    const copy = <T extends Uint8Array | Float64Array>(from: T, to: T): T => {
      to.set(from);
      return to;
    };
    this.kinds = copy(this.kinds, new Uint8Array(capacity));
    this.scales = copy(this.scales, new Float64Array(capacity));
    this.codedNorms = copy(this.codedNorms, new Float64Array(capacity));
    this.lossNorms = copy(this.lossNorms, new Float64Array(capacity));
    this.capacity = capacity;
    if (this.width > 0) this.reserve();
  }

  /** Grows the kernel's memory to the layout's size, or marks the codes full. */
  private reserve(): void {
    if (this.full) return;
    try {
      this.kernel.reserve(this.rowsAt + this.capacity * 4);
    } catch {
      this.full = true;
    }
  }

  // The kernel's memory: the query's codes, every slot's codes, then the products and the
  // list of slots they are for (an i32 each, for as many as there are slots).
  private get codesAt(): number {
    return this.width;
  }

  private get outAt(): number {
    return this.width + this.capacity * this.width;
  }

  private get rowsAt(): number {
    return this.outAt + this.capacity * 4;
  }

  /** Codes `embedding` into `slot` (null: the slot has no vector). */
  set(slot: number, embedding: ArrayLike<number> | null): void {
    this.kinds[slot] = NONE;
    if (embedding === null) return;
    if (this.width === 0) {
      this.dimensions = embedding.length;
      this.width = Math.ceil(embedding.length / 16) * 16;
      this.reserve();
    }
    if (this.full) return;
    // Every stored embedding has the file's size (DIMENSION_MISMATCH otherwise), but one that
    // did not would be left to SQL, as is a non-finite one. A zero vector scores NULL in SQL,
    // so it is never returned.
    const at = this.codesAt + slot * this.width;
    const coded =
      embedding.length === this.dimensions
        ? encode(embedding, new Int8Array(this.kernel.buffer, at, this.width))
        : null;
    if (coded === null) {
      this.kinds[slot] = isZero(embedding) ? NONE : UNCODED;
      return;
    }
    this.kinds[slot] = CODED;
    this.scales[slot] = coded.scale / coded.norm;
    this.codedNorms[slot] = coded.codedNorm / coded.norm;
    this.lossNorms[slot] = coded.lossNorm / coded.norm;
  }

  /** Moves `from`'s codes to slot `to` (compaction: `to` ≤ `from`). */
  move(from: number, to: number): void {
    this.kinds[to] = this.kinds[from] as number;
    this.scales[to] = this.scales[from] as number;
    this.codedNorms[to] = this.codedNorms[from] as number;
    this.lossNorms[to] = this.lossNorms[from] as number;
    if (this.width > 0 && !this.full) {
      const bytes = new Uint8Array(this.kernel.buffer);
      const at = this.codesAt;
      bytes.copyWithin(at + to * this.width, at + from * this.width, at + (from + 1) * this.width);
    }
  }

  /**
   * The slots among the first `slots` marked in `visible` that may be among
   * the `limit` most similar to `query` (see the class and `Candidates`), or null when the
   * query cannot be coded (zero, non-finite, or not the stored size), there
   * are too many, or the codes are full.
   */
  candidates(
    query: Float32Array,
    visible: Uint8Array,
    slots: number,
    limit: number,
  ): Candidates | null {
    if (this.width === 0) return { slots: [], settles: Number.NEGATIVE_INFINITY };
    if (this.full || query.length !== this.dimensions) return null;
    const queryCodes = new Int8Array(this.kernel.buffer, 0, this.width);
    const coded = encode(query, queryCodes);
    if (coded === null) return null;
    // The products are computed for the visible coded slots only: a caller who sees a tenth of
    // the records (or filters to it) pays a tenth of the pass.
    const { kinds, scales, codedNorms, lossNorms } = this;
    const rows = new Int32Array(this.kernel.buffer, this.rowsAt, slots);
    const found: number[] = [];
    let count = 0;
    for (let slot = 0; slot < slots; slot += 1) {
      if (visible[slot] !== 1) continue;
      const kind = kinds[slot];
      if (kind === CODED) {
        rows[count] = slot;
        count += 1;
      } else if (kind === UNCODED) {
        found.push(slot);
      }
    }
    this.kernel.dot(0, this.codesAt, this.width, this.rowsAt, count, this.outAt);
    const products = new Int32Array(this.kernel.buffer, this.outAt, count);
    const queryScale = coded.scale / coded.norm;
    const queryLoss = coded.lossNorm / coded.norm;
    // One pass over the bounds: the `limit` best lower bounds in a min-heap (the least at [0]),
    // and the records whose upper bound reaches the bar so far. The bar only rises, so the
    // records that reach the final bar are among those kept, which are checked against it after.
    const lows = new Float64Array(limit);
    let held = 0;
    let bar = Number.NEGATIVE_INFINITY;
    const kept: number[] = [];
    const highs: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const slot = rows[i] as number;
      const estimate = (products[i] as number) * (scales[slot] as number) * queryScale;
      const spread = (codedNorms[slot] as number) * queryLoss + (lossNorms[slot] as number);
      const low = estimate - spread;
      if (held < limit) {
        siftUp(lows, held, low);
        held += 1;
        if (held === limit) bar = (lows[0] as number) - SLACK;
      } else if (low > (lows[0] as number)) {
        siftDown(lows, held, low);
        bar = (lows[0] as number) - SLACK;
      }
      const high = estimate + spread;
      if (!(high < bar)) {
        kept.push(slot);
        highs.push(high);
      }
    }
    for (let k = 0; k < kept.length; k += 1) {
      if ((highs[k] as number) < bar) continue;
      found.push(kept[k] as number);
      if (found.length > MOST_CANDIDATES) return null;
    }
    if (found.length > MOST_CANDIDATES) return null;
    // A slot left out has an upper bound below the bar; rounded, it stays below bar + 1e-10.
    return { slots: found, settles: held < limit ? bar : bar + SLACK / 2 };
  }
}

function isZero(vector: ArrayLike<number>): boolean {
  for (let i = 0; i < vector.length; i += 1) if (vector[i] !== 0) return false;
  return true;
}

/** Adds `value` to a min-heap of `size` values. */
function siftUp(heap: Float64Array, size: number, value: number): void {
  let at = size;
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if ((heap[parent] as number) <= value) break;
    heap[at] = heap[parent] as number;
    at = parent;
  }
  heap[at] = value;
}

/** Replaces the least value of a min-heap of `size` values with `value`. */
function siftDown(heap: Float64Array, size: number, value: number): void {
  let at = 0;
  for (;;) {
    let child = 2 * at + 1;
    if (child >= size) break;
    if (child + 1 < size && (heap[child + 1] as number) < (heap[child] as number)) child += 1;
    if ((heap[child] as number) >= value) break;
    heap[at] = heap[child] as number;
    at = child;
  }
  heap[at] = value;
}
