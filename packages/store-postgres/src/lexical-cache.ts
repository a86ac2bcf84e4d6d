import { BM25_B, BM25_K1, type RecordFilters, type Visibility } from '@mnemo/core';
import { type CachedOwner, CachedRecords, intern, SCOPES } from './cached-records.js';
import { SCORE_MARGIN } from './scores.js';

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

/** BM25's k1 · (1 − b): the part of a term score's denominator that does not grow with length. */
const NORM = BM25_K1 * (1 - BM25_B);

/** Candidates past this many times the depth asked for (ties at the cut) are not worth it. */
const MOST_CANDIDATES_PER_DEPTH = 20;

/** A term of a search, with its postings, weight (idf · (k1 + 1)) and bound of its score. */
interface Weighed {
  readonly term: number;
  readonly list: PostingList;
  readonly df: number;
  readonly weight: number;
  readonly bound: number;
}

/**
 * The postings of one term: slots and term frequencies. Plain arrays (of
 * small integers, held unboxed): most terms have a posting or two, and
 * a pair of typed arrays cost some 200 bytes of objects each.
 */
class PostingList {
  readonly slots: number[] = [];
  readonly tfs: number[] = [];
  /** The largest tf and the least length of the records ever listed: bounds of the term's score. */
  maxTf = 0;
  minLength = Number.POSITIVE_INFINITY;

  push(slot: number, tf: number, length: number): void {
    this.maxTf = Math.max(this.maxTf, tf);
    this.minLength = Math.min(this.minLength, length);
    this.slots.push(slot);
    this.tfs.push(tf);
  }

  remove(slot: number): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    const last = this.slots.length - 1;
    this.slots[at] = this.slots[last] as number;
    this.tfs[at] = this.tfs[last] as number;
    this.slots.pop();
    this.tfs.pop();
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
 * search or a sweep finds it missing, costing candidates, never a wrong
 * answer.
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
  private postings: PostingList[] = [];
  /**
   * Per slot, its record's term ids and frequencies, in turn (to look up its common terms, and
   * to replace them when the record is added again).
   */
  private own: (number[] | undefined)[] = [];
  private lengths = new Float64Array(0);
  private types = new Int32Array(0);
  private readonly typeKeys = new Map<string, number>();
  /** Per-search scratch: each slot's score, and whether it may be visible (0 unknown, 1 yes, 2 no). */
  private scores = new Float64Array(0);
  private seen = new Uint8Array(0);
  private touched = new Int32Array(0);

  /** Adds a record, or replaces the one of its id (see `place`). */
  add(record: LexicalRecord): void {
    const slot = this.place(record);
    this.lengths[slot] = record.docLength;
    this.types[slot] = intern(this.typeKeys, record.memoryType);
    const own: number[] = [];
    record.terms.forEach((term, i) => {
      own.push(intern(this.termIds, term), record.tfs[i] as number);
    });
    const old = this.own[slot];
    if (old !== undefined) {
      if (old.length === own.length && old.every((value, i) => value === own[i])) return;
      for (let i = 0; i < old.length; i += 2) this.postings[old[i] as number]?.remove(slot);
    }
    this.own[slot] = own;
    for (let i = 0; i < own.length; i += 2) {
      const term = own[i] as number;
      let list = this.postings[term];
      if (list === undefined) {
        list = new PostingList();
        this.postings[term] = list;
      }
      list.push(slot, own[i + 1] as number, record.docLength);
    }
  }

  /**
   * The ids of the held records that may be among the `limit` visible ones
   * of best BM25 score under `stats` (the `depth` best, and any tied with the `depth`-th; all
   * found, when fewer), with a bound
   * of the score of every record that may be visible and is not among them
   * (`settles`, -Infinity for none): the candidates hold the top once its
   * `limit`-th visible record scores above `settles` + `SCORE_MARGIN`. Every
   * record that scores within twice that margin of the `depth`-th is a
   * candidate, so that ties at the cut settle. Null when those ties are too
   * many to be worth checking.
   *
   * As `lexicalPruned` does (MaxScore), the postings of the query's common
   * terms (in more than one record in 20) are not read: the records found
   * through the other terms look their common terms up among their own, and
   * a record holding only common terms scores at most the sum of their
   * bounds (largest tf, least length), which `settles` then includes. While
   * that sum reaches the cut, the rarest common term is read too.
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
      this.touched = new Int32Array(this.live.length);
    }
    const perLength = (BM25_K1 * BM25_B) / stats.avgdl;
    const terms: Weighed[] = [];
    stats.terms.forEach((name, t) => {
      const term = this.termIds.get(name);
      const list = term === undefined ? undefined : this.postings[term];
      if (term === undefined || list === undefined) return;
      const df = stats.dfs[t] as number;
      const weight = Math.log(1 + (stats.n - df + 0.5) / (df + 0.5)) * (BM25_K1 + 1);
      const bound = (weight * list.maxTf) / (list.maxTf + NORM + perLength * list.minLength);
      terms.push({ term, list, df, weight, bound });
    });
    // The common terms first as lexicalPruned takes them; while their bounds reach the cut,
    // the rarest of them is read too.
    terms.sort((a, b) => a.df - b.df);
    const passes = this.passes(visibility, filters);
    let read = Math.max(1, terms.filter((t) => t.df <= stats.n / 20).length);
    for (; read < terms.length; read += 1) {
      const common = terms.slice(read);
      const bound = common.reduce((sum, t) => sum + t.bound, 0);
      const found = this.best(terms.slice(0, read), common, passes, perLength, depth, bound);
      if (found !== null) return found;
    }
    return this.best(terms, [], passes, perLength, depth, Number.NEGATIVE_INFINITY);
  }

  /** Whether a slot's record may be visible to the caller and pass the memory type and scope filters. */
  private passes(visibility: Visibility, filters: RecordFilters): (slot: number) => boolean {
    const visible = this.mayBeVisible(visibility);
    const types =
      filters.memoryTypes &&
      new Set(filters.memoryTypes.map((type) => this.typeKeys.get(type) ?? -1));
    const scopes = filters.scopes && new Set(filters.scopes.map((scope) => SCOPES.indexOf(scope)));
    if (types === undefined && scopes === undefined) return visible;
    return (slot) =>
      visible(slot) &&
      (types === undefined || types.has(this.types[slot] as number)) &&
      (scopes === undefined || scopes.has(this.scopes[slot] as number));
  }

  /**
   * `candidates` over the records holding a term of `read`, scored in full
   * (the terms of `looked` looked up in their own postings), the rest bound
   * by `others`; null when that bound reaches the cut.
   */
  private best(
    read: readonly Weighed[],
    looked: readonly Weighed[],
    passes: (slot: number) => boolean,
    perLength: number,
    depth: number,
    others: number,
  ): { ids: string[]; settles: number } | null {
    const { scores, seen, touched, lengths } = this;
    let count = 0;
    for (const { list, weight } of read) {
      const { slots: listed, tfs: frequencies } = list;
      for (let i = 0; i < listed.length; i += 1) {
        const slot = listed[i] as number;
        let state = seen[slot] as number;
        if (state === 0) {
          state = passes(slot) ? 1 : 2;
          seen[slot] = state;
          touched[count] = slot;
          count += 1;
          scores[slot] = 0;
        }
        if (state !== 1) continue;
        const tf = frequencies[i] as number;
        scores[slot] =
          (scores[slot] as number) +
          (weight * tf) / (tf + NORM + perLength * (lengths[slot] as number));
      }
    }
    // The visible ones, with their partial scores; the depth-th best of those is a floor of the
    // cut, so a record whose partial score and common terms' bounds cannot reach it is left
    // out, bound by that sum, without looking its common terms up.
    let scored = 0;
    for (let i = 0; i < count; i += 1) {
      const slot = touched[i] as number;
      const state = seen[slot];
      seen[slot] = 0;
      if (state !== 1) continue;
      touched[scored] = slot;
      scored += 1;
    }
    const found = touched.subarray(0, scored);
    if (scored <= depth) {
      if (others !== Number.NEGATIVE_INFINITY) return null;
      return { ids: Array.from(found, (slot) => this.ids[slot] as string), settles: others };
    }
    const values = new Float64Array(scored);
    for (let i = 0; i < scored; i += 1) values[i] = scores[found[i] as number] as number;
    let settles = others;
    let full = scored;
    if (looked.length > 0) {
      const floor = kthLargest(values, depth) - 2 * SCORE_MARGIN;
      const bound = looked.reduce((sum, t) => sum + t.bound, 0);
      full = 0;
      for (let i = 0; i < scored; i += 1) {
        const slot = found[i] as number;
        const partial = scores[slot] as number;
        if (partial + bound < floor) {
          if (partial + bound > settles) settles = partial + bound;
          continue;
        }
        found[full] = slot;
        full += 1;
        const own = this.own[slot] as number[];
        let score = partial;
        for (const { term, weight } of looked) {
          for (let at = 0; at < own.length; at += 2) {
            if (own[at] !== term) continue;
            const tf = own[at + 1] as number;
            score += (weight * tf) / (tf + NORM + perLength * (lengths[slot] as number));
            break;
          }
        }
        scores[slot] = score;
        values[full - 1] = score;
      }
    }
    const cut = kthLargest(values.subarray(0, full), depth);
    if (cut - 2 * SCORE_MARGIN <= settles + SCORE_MARGIN) return null;
    const ids: string[] = [];
    for (let i = 0; i < full; i += 1) {
      const slot = found[i] as number;
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

  /**
   * Moves what each slot keeps to its new slot, and lets go of the terms
   * that only dropped records held: term ids are renumbered too, and each
   * list's bounds become those of the records it still lists.
   */
  protected renumbered(to: Int32Array, count: number): void {
    const own: (number[] | undefined)[] = new Array(count);
    for (let slot = 0; slot < to.length; slot += 1) {
      const next = to[slot] as number;
      if (next < 0) continue;
      own[next] = this.own[slot];
      this.lengths[next] = this.lengths[slot] as number;
      this.types[next] = this.types[slot] as number;
    }
    this.own = own;
    const termTo = new Int32Array(this.postings.length).fill(-1);
    const postings: PostingList[] = [];
    this.postings.forEach((list, term) => {
      if (list === undefined) return;
      const kept = new PostingList();
      for (let i = 0; i < list.slots.length; i += 1) {
        const next = to[list.slots[i] as number] as number;
        if (next >= 0) kept.push(next, list.tfs[i] as number, this.lengths[next] as number);
      }
      if (kept.slots.length === 0) return;
      termTo[term] = postings.length;
      postings.push(kept);
    });
    this.postings = postings;
    for (const [name, term] of this.termIds) {
      const next = termTo[term] as number;
      if (next < 0) this.termIds.delete(name);
      else this.termIds.set(name, next);
    }
    for (const terms of own) {
      if (terms === undefined) continue;
      for (let i = 0; i < terms.length; i += 2) terms[i] = termTo[terms[i] as number] as number;
    }
  }
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
