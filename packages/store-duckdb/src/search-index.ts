import {
  BM25_B,
  BM25_K1,
  compareByteOrder,
  type Grant,
  type RecordFilters,
  type TermFrequency,
  type Visibility,
} from '@mnemo/core';
import { VectorCodes } from '@mnemo/core/vector-codes';
import { GrantIndex, principalKey } from './grant-index.js';
import { noFilters } from './sql.js';

/** What the index keeps of one live, non-plan record: what visibility and filters read. */
export interface IndexedDocument {
  readonly id: string;
  readonly agentId: string;
  readonly orgId: string | null;
  readonly scope: string;
  readonly expiresAt: Date | null;
  readonly memoryType: string;
  readonly importance: number;
  readonly tags: readonly string[];
  readonly threadId: string | null;
  readonly createdAt: Date;
  /** Number of terms in the content (BM25 document length). */
  readonly docLength: number;
  /** Kept (as codes) once the index holds vectors (see `holdVectors`). */
  readonly embedding?: Float32Array | null;
}

/** A record id with its search score, rounded as `MemoryStore.searchLexical` and `searchVector` round it. */
export interface RankedId {
  readonly id: string;
  readonly score: number;
}

const SCOPES: readonly string[] = ['private', 'shared', 'public', 'global'];
const MEMORY_TYPES: readonly string[] = ['episodic', 'semantic', 'procedural', 'working'];
const NO_TAGS = new Int32Array(0);
const SHARED = 1;
const PUBLIC = 2;
const GLOBAL = 3;

/** 10 decimals, as DuckDB's `round(x, 10)` computes it (see SCORE_DIGITS in queries.ts). */
const ROUNDING = 10 ** 10;

/**
 * A term's postings as (slot, tf) pairs side by side in one growing array: a
 * typed array costs about 100 bytes of its own, and most terms (numbers,
 * names, typos) have one or two postings.
 */
export class Postings {
  pairs = new Int32Array(2);
  size = 0;

  push(slot: number, tf: number): void {
    const at = this.size * 2;
    if (at === this.pairs.length) {
      const pairs = new Int32Array(at * 2);
      pairs.set(this.pairs);
      this.pairs = pairs;
    }
    this.pairs[at] = slot;
    this.pairs[at + 1] = tf;
    this.size += 1;
  }
}

/** Strings numbered in the order first seen, so documents compare owners and orgs as integers. */
class Interned {
  private readonly numbers = new Map<string, number>();

  get(value: string): number {
    let n = this.numbers.get(value);
    if (n === undefined) {
      n = this.numbers.size;
      this.numbers.set(value, n);
    }
    return n;
  }

  /** The number of a value already seen, else -1 (nothing carries it). */
  find(value: string): number {
    return this.numbers.get(value) ?? -1;
  }
}

/**
 * The postings of every live, non-plan record, with what BM25, the
 * visibility rule and the filters read of the record, in memory, for
 * lexical search; and once asked to (`holdVectors`), the records'
 * embeddings as codes, to find a vector search's candidates (see
 * VectorCodes). Like `PlanIndex`, it is exact because this process is the
 * file's only writer: it is loaded once from the file through the writer's
 * queue and then changed as transactions commit.
 *
 * A search computes what `searchLexical`'s SQL computes, in the same
 * arithmetic: the collection statistics (count and mean length) of the
 * records visible to the caller at `visibility.now` that pass the filters,
 * each term's document frequency among them, and each of their postings'
 * BM25 term score, summed per record and rounded to 10 decimals; ranked by
 * score, then id. The SQL query spends about 25 ms on this at 100,000
 * records (reading 35,000 postings, the statistics over every visible
 * record, grouping); typed arrays in memory do it in a few milliseconds.
 *
 * Records are numbered by slot. A forgotten record's slot is marked dead and
 * its postings skipped until enough are dead to rebuild the lists.
 */
export class SearchIndex {
  private ids: string[] = [];
  private owners = new Int32Array(1024);
  private orgs = new Int32Array(1024);
  private scopes = new Uint8Array(1024);
  /** Expiry in ms since the epoch, Infinity for none. */
  private expiries = new Float64Array(1024);
  private lengths = new Int32Array(1024);
  private live = new Uint8Array(1024);
  private types = new Uint8Array(1024);
  private importances = new Float64Array(1024);
  /** Creation in ms since the epoch. */
  private created = new Float64Array(1024);
  /** Interned thread id, -1 for none. */
  private threads = new Int32Array(1024);
  /** Interned tags, by slot. */
  private tags: Int32Array[] = [];
  private readonly slotOf = new Map<string, number>();
  private readonly terms = new Map<string, Postings>();
  /** Grants on indexed records. */
  private readonly grants = new GrantIndex();
  private readonly ownerKeys = new Interned();
  private readonly orgKeys = new Interned();
  private readonly threadKeys = new Interned();
  private readonly tagKeys = new Interned();
  private dead = 0;
  /** The records' embeddings as codes, once `holdVectors` has been called. */
  private vectors: VectorCodes | null = null;
  // Per-search scratch, reused: visibility of each slot and the score being summed.
  private visible = new Uint8Array(0);
  private scores = new Float64Array(0);
  /** The slots a search has scored, in the order first scored (reused, like `scores`). */
  private touched = new Int32Array(0);

  /** Live records indexed. */
  get size(): number {
    return this.slotOf.size;
  }

  /** Adds a record with its postings (replacing an indexed record of the same id). */
  add(document: IndexedDocument, terms: readonly TermFrequency[]): void {
    const slot = this.addDocument(document);
    for (const { term, tf } of terms) this.postingsOf(term).push(slot, tf);
  }

  /**
   * Adds a record without postings and returns its slot: the next number,
   * counting from 0 in a new index (which `loadSearchIndex` relies on).
   */
  addDocument(document: IndexedDocument): number {
    this.remove(document.id);
    const slot = this.ids.length;
    if (slot === this.live.length) this.grow(slot * 2);
    this.ids.push(document.id);
    this.slotOf.set(document.id, slot);
    this.owners[slot] = this.ownerKeys.get(principalKey(document.agentId, document.orgId));
    this.orgs[slot] = this.orgKeys.get(document.orgId ?? '');
    this.scopes[slot] = SCOPES.indexOf(document.scope);
    this.expiries[slot] = document.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
    this.lengths[slot] = document.docLength;
    this.live[slot] = 1;
    this.types[slot] = MEMORY_TYPES.indexOf(document.memoryType);
    this.importances[slot] = document.importance;
    this.created[slot] = document.createdAt.getTime();
    this.threads[slot] = document.threadId === null ? -1 : this.threadKeys.get(document.threadId);
    this.vectors?.set(slot, document.embedding ?? null);
    this.tags.push(
      document.tags.length === 0
        ? NO_TAGS
        : Int32Array.from(document.tags, (tag) => this.tagKeys.get(tag)),
    );
    return slot;
  }

  /** A term's postings, to push (slot, tf) pairs on; created empty if the term is new. */
  postingsOf(term: string): Postings {
    let postings = this.terms.get(term);
    if (postings === undefined) {
      postings = new Postings();
      this.terms.set(term, postings);
    }
    return postings;
  }

  /** Drops a record (forgotten or redacted); unknown ids are ignored. */
  remove(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    this.grants.delete(id);
    this.live[slot] = 0;
    this.dead += 1;
    if (this.dead > 1024 && this.dead > this.slotOf.size) this.compact();
  }

  /** Records a grant (replacing one for the same grantee) if its record is indexed. */
  grant(grant: Grant): void {
    if (this.slotOf.has(grant.recordId)) this.grants.put(grant);
  }

  /**
   * From now on, keeps each record's embedding as codes for `vectorCandidates`:
   * those added from here on with theirs, the indexed ones once given to `putVector`.
   */
  holdVectors(): void {
    if (this.vectors !== null) return;
    this.vectors = new VectorCodes();
    this.vectors.grow(this.live.length);
  }

  /** Releases what the vectors hold outside the heap (the kernel's helper thread). */
  close(): void {
    this.vectors?.close();
  }

  /** Codes the embedding of an indexed record (see `holdVectors`); unknown ids are ignored. */
  putVector(id: string, embedding: ArrayLike<number> | null): void {
    const slot = this.slotOf.get(id);
    if (slot !== undefined) this.vectors?.set(slot, embedding);
  }

  /**
   * The ids of the records visible under `visibility` that pass `filters`
   * among which are the `limit` most similar to `vector` by cosine (see
   * VectorCodes), in no order; null when the codes cannot tell (see
   * `VectorCodes.candidates`) or the index holds no vectors.
   */
  vectorCandidates(
    visibility: Visibility,
    filters: RecordFilters,
    vector: Float32Array,
    limit: number,
  ): string[] | null {
    if (this.vectors === null) return null;
    const visible = this.markVisible(visibility);
    this.applyFilters(filters, visible);
    const found = this.vectors.candidates(vector, visible, this.ids.length, limit);
    return found === null ? null : found.slots.map((slot) => this.ids[slot] as string);
  }

  /**
   * The `limit` best records for `terms` (distinct analyzed terms) among
   * those visible under `visibility` that pass `filters`: BM25 as
   * `MemoryStore.searchLexical` specifies it, ordered by score descending,
   * then id ascending.
   */
  search(
    visibility: Visibility,
    filters: RecordFilters,
    terms: readonly string[],
    limit: number,
  ): RankedId[] {
    const slots = this.ids.length;
    const visible = this.markVisible(visibility);
    this.applyFilters(filters, visible);
    let n = 0;
    let lengthSum = 0;
    for (let slot = 0; slot < slots; slot += 1) {
      if (visible[slot] === 1) {
        n += 1;
        lengthSum += this.lengths[slot] as number;
      }
    }
    if (n === 0) return [];
    const avgdl = lengthSum / n;
    const scores = this.scores.length >= slots ? this.scores : new Float64Array(slots);
    this.scores = scores;
    const touched = this.touched.length >= slots ? this.touched : new Int32Array(slots);
    this.touched = touched;
    let count = 0;
    for (const term of new Set(terms)) {
      const postings = this.terms.get(term);
      if (postings === undefined) continue;
      const { pairs, size } = postings;
      const end = size * 2;
      let df = 0;
      for (let i = 0; i < end; i += 2) df += visible[pairs[i] as number] as number;
      if (df === 0) continue;
      // The SQL query's expressions, in its order of operations, so each term score is the same double.
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (let i = 0; i < end; i += 2) {
        const slot = pairs[i] as number;
        if (visible[slot] !== 1) continue;
        const tf = pairs[i + 1] as number;
        const dl = this.lengths[slot] as number;
        const score =
          (idf * tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * dl) / avgdl));
        if (scores[slot] === 0) {
          touched[count] = slot;
          count += 1;
        }
        scores[slot] = (scores[slot] as number) + score;
      }
    }
    // The best `limit`, kept sorted; most candidates fall below the last and are skipped
    // (before their id is read, which only a tie needs).
    const best: RankedId[] = [];
    for (let k = 0; k < count; k += 1) {
      const slot = touched[k] as number;
      const score = Math.round((scores[slot] as number) * ROUNDING) / ROUNDING;
      scores[slot] = 0;
      const last = best.length === limit ? (best[limit - 1] as RankedId) : null;
      if (last !== null && score < last.score) continue;
      const id = this.ids[slot] as string;
      if (last !== null && score === last.score && compareByteOrder(id, last.id) > 0) continue;
      let at = best.length;
      while (at > 0) {
        const above = best[at - 1] as RankedId;
        if (above.score > score || (above.score === score && compareByteOrder(above.id, id) < 0))
          break;
        at -= 1;
      }
      best.splice(at, 0, { id, score });
      if (best.length > limit) best.pop();
    }
    return best;
  }

  /** Marks each slot visible (1) or not (0) under the visibility rule of `visiblePredicate`. */
  private markVisible(v: Visibility): Uint8Array {
    const slots = this.ids.length;
    if (this.visible.length < slots) this.visible = new Uint8Array(this.live.length);
    const visible = this.visible;
    const now = v.now.getTime();
    const grantee = principalKey(v.agentId, v.orgId);
    const owner = this.ownerKeys.find(grantee);
    const org = this.orgKeys.find(v.orgId ?? '');
    for (let slot = 0; slot < slots; slot += 1) {
      let yes = 0;
      if (this.live[slot] === 1 && (this.expiries[slot] as number) > now) {
        const scope = this.scopes[slot];
        if (this.owners[slot] === owner || scope === GLOBAL) yes = 1;
        else if (scope === PUBLIC) yes = this.orgs[slot] === org ? 1 : 0;
        else if (scope === SHARED) {
          yes = this.grants.live(this.ids[slot] as string, grantee, now) ? 1 : 0;
        }
      }
      visible[slot] = yes;
    }
    return visible;
  }

  /** Clears the mark of each marked slot that fails `filters` (see `filterPredicate`). */
  private applyFilters(f: RecordFilters, visible: Uint8Array): void {
    if (noFilters(f)) return;
    // Codes of the wanted types and scopes (an unknown name is -1, which no record has).
    const codes = (names: readonly string[] | undefined, all: readonly string[]) =>
      names === undefined ? null : new Set(names.map((name) => all.indexOf(name)));
    const types = codes(f.memoryTypes, MEMORY_TYPES);
    const scopes = codes(f.scopes, SCOPES);
    // A tag or thread no record carries is -1, which no record's tags or thread equal.
    const tagsAny = f.tagsAny?.map((tag) => this.tagKeys.find(tag)) ?? null;
    const tagsAll = f.tagsAll?.map((tag) => this.tagKeys.find(tag)) ?? null;
    const thread = f.threadId === undefined ? null : this.threadKeys.find(f.threadId);
    const minImportance = f.minImportance ?? Number.NEGATIVE_INFINITY;
    const after = f.createdAfter?.getTime() ?? Number.NEGATIVE_INFINITY;
    const before = f.createdBefore?.getTime() ?? Number.POSITIVE_INFINITY;
    const slots = this.ids.length;
    for (let slot = 0; slot < slots; slot += 1) {
      if (visible[slot] !== 1) continue;
      const tags = this.tags[slot] as Int32Array;
      const passes =
        (types === null || types.has(this.types[slot] as number)) &&
        (scopes === null || scopes.has(this.scopes[slot] as number)) &&
        (this.importances[slot] as number) >= minImportance &&
        (this.created[slot] as number) >= after &&
        (this.created[slot] as number) < before &&
        (thread === null || (thread !== -1 && this.threads[slot] === thread)) &&
        (tagsAny === null || tagsAny.some((tag) => tags.includes(tag))) &&
        (tagsAll === null || tagsAll.every((tag) => tags.includes(tag)));
      if (!passes) visible[slot] = 0;
    }
  }

  private grow(capacity: number): void {
    const copy = <T extends Int32Array | Uint8Array | Float64Array>(from: T, to: T): T => {
      to.set(from.subarray(0, Math.min(from.length, to.length)));
      return to;
    };
    this.owners = copy(this.owners, new Int32Array(capacity));
    this.orgs = copy(this.orgs, new Int32Array(capacity));
    this.scopes = copy(this.scopes, new Uint8Array(capacity));
    this.expiries = copy(this.expiries, new Float64Array(capacity));
    this.lengths = copy(this.lengths, new Int32Array(capacity));
    this.live = copy(this.live, new Uint8Array(capacity));
    this.types = copy(this.types, new Uint8Array(capacity));
    this.importances = copy(this.importances, new Float64Array(capacity));
    this.created = copy(this.created, new Float64Array(capacity));
    this.threads = copy(this.threads, new Int32Array(capacity));
    this.vectors?.grow(capacity);
  }

  /** Renumbers the live records from 0 and drops the dead ones' postings. */
  private compact(): void {
    const renumbered = new Int32Array(this.ids.length).fill(-1);
    const ids: string[] = [];
    const tags: Int32Array[] = [];
    for (let slot = 0; slot < this.ids.length; slot += 1) {
      if (this.live[slot] !== 1) continue;
      const to = ids.length;
      renumbered[slot] = to;
      ids.push(this.ids[slot] as string);
      tags.push(this.tags[slot] as Int32Array);
      this.types[to] = this.types[slot] as number;
      this.importances[to] = this.importances[slot] as number;
      this.created[to] = this.created[slot] as number;
      this.threads[to] = this.threads[slot] as number;
      this.owners[to] = this.owners[slot] as number;
      this.orgs[to] = this.orgs[slot] as number;
      this.scopes[to] = this.scopes[slot] as number;
      this.expiries[to] = this.expiries[slot] as number;
      this.lengths[to] = this.lengths[slot] as number;
      this.live[to] = 1;
      this.vectors?.move(slot, to);
    }
    this.live.fill(0, ids.length);
    this.ids = ids;
    this.tags = tags;
    for (const [id, slot] of this.slotOf) this.slotOf.set(id, renumbered[slot] as number);
    for (const [term, postings] of this.terms) {
      const kept = new Postings();
      const { pairs, size } = postings;
      for (let i = 0; i < size * 2; i += 2) {
        const slot = renumbered[pairs[i] as number] as number;
        if (slot >= 0) kept.push(slot, pairs[i + 1] as number);
      }
      if (kept.size === 0) this.terms.delete(term);
      else this.terms.set(term, kept);
    }
    this.dead = 0;
  }
}
