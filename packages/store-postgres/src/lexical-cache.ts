import { BM25_B, BM25_K1, type RecordFilters, type Visibility } from '@mnemo/core';
import { type CachedOwner, CachedRecords, intern, SCOPES } from './cached-records.js';

/** What the lexical cache keeps of a record: its postings, length, memory type and owner part. */
export interface LexicalRecord extends CachedOwner {
  readonly memoryType: string;
  /** The least `doc_length` of its postings (they all carry the same one). */
  readonly docLength: number;
  /** Its terms, each once, and their frequencies. */
  readonly terms: readonly string[];
  readonly tfs: readonly number[];
}

/** BM25's statistics of one search, as PostgreSQL computed them for the caller (see `lexicalStats`). */
export interface LexicalStats {
  readonly n: number;
  readonly avgdl: number;
  /** The query's terms that visible records hold, in byte order, and their document frequencies. */
  readonly terms: readonly string[];
  readonly dfs: readonly number[];
}

/**
 * How far a score in JavaScript and PostgreSQL's rounded one of the same
 * record can be apart: scores are rounded to 1e-10, and sums added in another
 * order, or `ln` and `Math.log`, differ in their last bits (see
 * `lexicalPruned`, which takes the same margin).
 */
export const SCORE_MARGIN = 1e-9;

/** Candidates past this many times the depth asked for (ties at the cut) are not worth it. */
const MOST_CANDIDATES_PER_DEPTH = 20;

/** A growable list of postings of one term: slots and term frequencies. */
class PostingList {
  slots = new Int32Array(4);
  tfs = new Int32Array(4);
  size = 0;

  push(slot: number, tf: number): void {
    if (this.size === this.slots.length) {
      const slots = new Int32Array(this.size * 2);
      const tfs = new Int32Array(this.size * 2);
      slots.set(this.slots);
      tfs.set(this.tfs);
      this.slots = slots;
      this.tfs = tfs;
    }
    this.slots[this.size] = slot;
    this.tfs[this.size] = tf;
    this.size += 1;
  }

  remove(slot: number): void {
    const at = this.slots.subarray(0, this.size).indexOf(slot);
    if (at < 0) return;
    this.size -= 1;
    this.slots[at] = this.slots[this.size] as number;
    this.tfs[at] = this.tfs[this.size] as number;
  }
}

/**
 * Every live, non-plan record's postings (the terms of `mnemo_postings`,
 * with their frequencies and the record's length), in this process's memory,
 * with its owner, org, scope, memory type and expiry: a lexical search then
 * scores the records that may be visible with the caller's BM25 statistics,
 * which PostgreSQL computes, and has PostgreSQL score in full only the few
 * that can reach its top.
 *
 * It follows the table as VectorCache does (the `written_xid` feed from a
 * `FeedPosition`; see there): a write committed before a search starts is
 * held once that search's refresh has run; a deleted record stays until a
 * search finds it missing, costing candidates, never a wrong answer.
 *
 * The superset scored is VectorCache's (owned, global, public in the
 * caller's org, every unexpired shared one), passing the memory type and
 * scope filters. A record's BM25 score depends only on its own postings and
 * the statistics, so, with the statistics PostgreSQL then scores the
 * candidates with, a record left out scores at most what it scored here:
 * the best of those (`settles`) bounds every visible record that is not a
 * candidate.
 */
export class LexicalCache extends CachedRecords {
  private readonly termIds = new Map<string, number>();
  private readonly postings: PostingList[] = [];
  /** Per slot, its record's term ids and frequencies (to replace them when the record is added again). */
  private slotTerms: (Int32Array | undefined)[] = [];
  private slotTfs: (Int32Array | undefined)[] = [];
  private lengths = new Float64Array(0);
  private types = new Int32Array(0);
  private readonly typeKeys = new Map<string, number>();
  /** Per-search scratch: each slot's score, and whether it may be visible (0 unknown, 1 yes, 2 no). */
  private scores = new Float64Array(0);
  private seen = new Uint8Array(0);

  /** Adds a record, or replaces the one of its id (see `place`). */
  add(record: LexicalRecord): void {
    const slot = this.place(record);
    this.lengths[slot] = record.docLength;
    this.types[slot] = intern(this.typeKeys, record.memoryType);
    const terms = Int32Array.from(record.terms, (term) => intern(this.termIds, term));
    const tfs = Int32Array.from(record.tfs);
    const old = this.slotTerms[slot];
    if (old !== undefined) {
      const oldTfs = this.slotTfs[slot] as Int32Array;
      if (sameValues(old, terms) && sameValues(oldTfs, tfs)) return;
      for (const term of old) this.postings[term]?.remove(slot);
    }
    this.slotTerms[slot] = terms;
    this.slotTfs[slot] = tfs;
    for (let i = 0; i < terms.length; i += 1) {
      const term = terms[i] as number;
      let list = this.postings[term];
      if (list === undefined) {
        list = new PostingList();
        this.postings[term] = list;
      }
      list.push(slot, tfs[i] as number);
    }
  }

  /**
   * The ids of the held records that may be among the `limit` visible ones
   * of best BM25 score under `stats`, at least `depth` of them, with the best
   * score of the records that may be visible and are not among them
   * (`settles`, -Infinity for none): the candidates hold the top once its
   * `limit`-th visible record scores above `settles` + `SCORE_MARGIN`. Every
   * record that scores within twice that margin of the `depth`-th is a
   * candidate, so that ties at the cut settle. Null when those ties are too
   * many to be worth checking.
   */
  candidates(
    visibility: Visibility,
    filters: RecordFilters,
    stats: LexicalStats,
    depth: number,
  ): { ids: string[]; settles: number } | null {
    const slots = this.slots;
    if (this.scores.length < slots) {
      this.scores = new Float64Array(this.live.length);
      this.seen = new Uint8Array(this.live.length);
    }
    const { scores, seen } = this;
    const visible = this.mayBeVisible(visibility);
    const types =
      filters.memoryTypes &&
      new Set(filters.memoryTypes.map((type) => this.typeKeys.get(type) ?? -1));
    const scopes = filters.scopes && new Set(filters.scopes.map((scope) => SCOPES.indexOf(scope)));
    const passes = (slot: number) =>
      visible(slot) &&
      (types === undefined || types.has(this.types[slot] as number)) &&
      (scopes === undefined || scopes.has(this.scopes[slot] as number));
    const touched: number[] = [];
    const norm = BM25_K1 * (1 - BM25_B);
    const perLength = (BM25_K1 * BM25_B) / stats.avgdl;
    // Summed in term order (byte order, as `lexicalStats` returns them), as PostgreSQL sums.
    for (let t = 0; t < stats.terms.length; t += 1) {
      const term = this.termIds.get(stats.terms[t] as string);
      const list = term === undefined ? undefined : this.postings[term];
      if (list === undefined) continue;
      const df = stats.dfs[t] as number;
      const idf = Math.log(1 + (stats.n - df + 0.5) / (df + 0.5));
      const weight = idf * (BM25_K1 + 1);
      for (let i = 0; i < list.size; i += 1) {
        const slot = list.slots[i] as number;
        let state = seen[slot] as number;
        if (state === 0) {
          state = passes(slot) ? 1 : 2;
          seen[slot] = state;
          touched.push(slot);
          scores[slot] = 0;
        }
        if (state !== 1) continue;
        const tf = list.tfs[i] as number;
        scores[slot] =
          (scores[slot] as number) +
          (weight * tf) / (tf + norm + perLength * (this.lengths[slot] as number));
      }
    }
    const scored = touched.filter((slot) => seen[slot] === 1);
    for (const slot of touched) seen[slot] = 0;
    if (scored.length <= depth) {
      return {
        ids: scored.map((slot) => this.ids[slot] as string),
        settles: Number.NEGATIVE_INFINITY,
      };
    }
    const cut = kthLargest(
      Float64Array.from(scored, (slot) => scores[slot] as number),
      depth,
    );
    const ids: string[] = [];
    let settles = Number.NEGATIVE_INFINITY;
    for (const slot of scored) {
      const score = scores[slot] as number;
      if (score >= cut - 2 * SCORE_MARGIN) ids.push(this.ids[slot] as string);
      else if (score > settles) settles = score;
    }
    if (ids.length > MOST_CANDIDATES_PER_DEPTH * depth) return null;
    return { ids, settles };
  }

  protected resize(capacity: number): void {
    const lengths = new Float64Array(capacity);
    lengths.set(this.lengths);
    this.lengths = lengths;
    const types = new Int32Array(capacity);
    types.set(this.types);
    this.types = types;
  }

  protected renumbered(to: Int32Array, count: number): void {
    const terms: (Int32Array | undefined)[] = new Array(count);
    const tfs: (Int32Array | undefined)[] = new Array(count);
    for (let slot = 0; slot < to.length; slot += 1) {
      const next = to[slot] as number;
      if (next < 0) continue;
      terms[next] = this.slotTerms[slot];
      tfs[next] = this.slotTfs[slot];
      this.lengths[next] = this.lengths[slot] as number;
      this.types[next] = this.types[slot] as number;
    }
    this.slotTerms = terms;
    this.slotTfs = tfs;
    for (const list of this.postings) {
      if (list === undefined) continue;
      let kept = 0;
      for (let i = 0; i < list.size; i += 1) {
        const next = to[list.slots[i] as number] as number;
        if (next < 0) continue;
        list.slots[kept] = next;
        list.tfs[kept] = list.tfs[i] as number;
        kept += 1;
      }
      list.size = kept;
    }
  }
}

function sameValues(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The `k`-th largest of `values` (1-based, k ≤ length), reordering them (quickselect). */
function kthLargest(values: Float64Array, k: number): number {
  let low = 0;
  let high = values.length - 1;
  const target = k - 1;
  while (low < high) {
    const pivot = values[(low + high) >>> 1] as number;
    let i = low;
    let j = high;
    while (i <= j) {
      while ((values[i] as number) > pivot) i += 1;
      while ((values[j] as number) < pivot) j -= 1;
      if (i <= j) {
        const swap = values[i] as number;
        values[i] = values[j] as number;
        values[j] = swap;
        i += 1;
        j -= 1;
      }
    }
    if (target <= j) high = j;
    else if (target >= i) low = i;
    else return values[target] as number;
  }
  return values[target] as number;
}
