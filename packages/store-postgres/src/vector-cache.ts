import type { Visibility } from '@mnemo/core';
import { type Candidates, VectorCodes } from '@mnemo/core/vector-codes';
import { type CachedOwner, CachedRecords } from './cached-records.js';

/** What the cache keeps of a record: its vector and the owner part of visibility. */
export interface CachedRecord extends CachedOwner {
  readonly embedding: Float32Array | null;
}

/**
 * Every live, non-plan record's embedding as int8 codes (see `VectorCodes`),
 * in this process's memory, with its owner, org, scope and expiry: a vector
 * search then reads only the few records whose cosine can still reach its
 * top, instead of every visible embedding.
 *
 * Other processes write too, so the cache follows the table: each record
 * carries the id of the transaction that wrote it (`written_xid`, schema
 * version 7), and a refresh reads the records of the transactions that had
 * not finished at the previous refresh's snapshot (its xmax and in-progress
 * list, `FeedPosition`), in one statement whose snapshot becomes the next
 * position. A write committed before a search starts is therefore held
 * once that search's refresh has run. mnemo changes a written record only
 * to delete it; a deleted record stays cached until a search finds it
 * missing or a sweep does (see `drop` and `sweep`), which costs a search
 * candidates but never a wrong answer: SQL checks visibility and scores the
 * candidates. Any other write of a row (a restore copying old ids, a record
 * undeleted or its expiry lifted by hand) gets its transaction's id from a
 * trigger (schema version 8), so a refresh reads it again.
 *
 * The visibility rule's grants are not kept, so a search marks a superset of
 * the caller's visible records: owned, global, public in the caller's org,
 * and every unexpired shared one. A candidate set taken over the superset
 * holds the exact top only when enough of its best are visible, which
 * `Candidates.settles` tells after SQL has scored them.
 */
export class VectorCache extends CachedRecords {
  private readonly codes = new VectorCodes();
  /** Per-search scratch: which slots may be visible. */
  private maybe = new Uint8Array(0);

  /** Ends the dot kernel's helper thread. */
  close(): void {
    this.codes.close();
  }

  /**
   * Adds a record, or replaces the one of its id (a refresh reads some
   * records again; and a record deleted outright can come back under its id
   * by an import).
   */
  add(record: CachedRecord): void {
    this.codes.set(this.place(record), record.embedding);
  }

  /**
   * The ids of the held records that may be among the `limit` visible ones
   * most similar to `vector`, with the bound that proves it (see
   * `Candidates.settles`); null when the codes cannot tell.
   */
  candidates(
    visibility: Visibility,
    vector: Float32Array,
    limit: number,
  ): { ids: string[]; settles: number } | null {
    const slots = this.slots;
    if (this.maybe.length < slots) this.maybe = new Uint8Array(this.live.length);
    const maybe = this.maybe;
    const visible = this.mayBeVisible(visibility);
    for (let slot = 0; slot < slots; slot += 1) maybe[slot] = visible(slot) ? 1 : 0;
    const found: Candidates | null = this.codes.candidates(vector, maybe, slots, limit);
    if (found === null) return null;
    return { ids: found.slots.map((slot) => this.ids[slot] as string), settles: found.settles };
  }

  protected resize(capacity: number): void {
    this.codes.grow(capacity);
  }

  protected renumbered(to: Int32Array): void {
    for (let slot = 0; slot < to.length; slot += 1) {
      const next = to[slot] as number;
      if (next >= 0 && next !== slot) this.codes.move(slot, next);
    }
  }
}
