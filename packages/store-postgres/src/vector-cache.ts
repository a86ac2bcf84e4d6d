import { principalKey, type Visibility } from '@mnemo/core';
import { type Candidates, VectorCodes } from '@mnemo/core/vector-codes';

/** What the cache keeps of a record: what its vector and the owner part of visibility need. */
export interface CachedRecord {
  readonly id: string;
  readonly agentId: string;
  readonly orgId: string | null;
  readonly scope: string;
  /** Unix ms, or null for none. */
  readonly expiresAt: number | null;
  readonly embedding: Float32Array | null;
}

/** Where a refresh resumes (see VectorCache). xids as decimal text (`xid8`). */
export interface FeedPosition {
  /** The snapshot's xmax: every transaction from this one on had not finished. */
  readonly from: string;
  /** The snapshot's transactions still in progress. */
  readonly pending: readonly string[];
  /**
   * Which run of the transaction ids the ones above belong to: when the
   * server started, the records table's oid, and the token of the unlogged
   * `mnemo_cache_epoch` (migration 8). A restart, the schema restored anew,
   * or crash recovery (which hands out again the ids it had not logged)
   * changes it, and the ids above then mean nothing.
   */
  readonly run: string;
}

const SHARED = 1;
const PUBLIC = 2;
const GLOBAL = 3;
const SCOPES: readonly string[] = ['private', 'shared', 'public', 'global'];

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
 * missing (see `drop`), which costs a search candidates but never a wrong
 * answer: SQL checks visibility and scores the candidates. Any other write
 * of a row (a restore copying old ids, a record undeleted or its expiry
 * lifted by hand) gets its transaction's id from a trigger (schema version
 * 8), so a refresh reads it again.
 *
 * The visibility rule's grants are not kept, so a search marks a superset of
 * the caller's visible records: owned, global, public in the caller's org,
 * and every unexpired shared one. A candidate set taken over the superset
 * holds the exact top only when enough of its best are visible, which
 * `Candidates.settles` tells after SQL has scored them.
 */
export class VectorCache {
  private readonly codes = new VectorCodes();
  private ids: string[] = [];
  private readonly slotOf = new Map<string, number>();
  private owners = new Int32Array(0);
  private orgs = new Int32Array(0);
  private scopes = new Uint8Array(0);
  /** Expiry in ms since the epoch, Infinity for none. */
  private expiries = new Float64Array(0);
  private live = new Uint8Array(0);
  /** Per slot, the position its record was added toward (`moves` + 1 when added; see `drop`). */
  private addedIn = new Int32Array(0);
  private dead = 0;
  private readonly ownerKeys = new Map<string, number>();
  private readonly orgKeys = new Map<string, number>();
  /** Per-search scratch: which slots may be visible. */
  private maybe = new Uint8Array(0);
  /** Where the next refresh reads from; null until the first load. */
  private at: FeedPosition | null = null;
  /** How many times the position has moved (see `drop`). */
  private moves = 0;

  get position(): FeedPosition | null {
    return this.at;
  }

  /** Moves the position, once the records read up to it are added. */
  set position(position: FeedPosition) {
    this.at = position;
    this.moves += 1;
  }

  /**
   * A token for `drop`: a record found deleted in a snapshot taken after
   * this call may be dropped unless a refresh has added it again since (one
   * may have read a record of the same id written after its deletion).
   */
  get version(): number {
    return this.moves;
  }

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
    let slot = this.slotOf.get(record.id);
    if (slot === undefined) {
      slot = this.ids.length;
      if (slot === this.live.length) this.grow(Math.max(1024, slot * 2));
      this.ids.push(record.id);
      this.slotOf.set(record.id, slot);
    }
    this.owners[slot] = intern(this.ownerKeys, principalKey(record));
    this.orgs[slot] = intern(this.orgKeys, record.orgId ?? '');
    this.scopes[slot] = SCOPES.indexOf(record.scope);
    this.expiries[slot] = record.expiresAt ?? Number.POSITIVE_INFINITY;
    this.live[slot] = 1;
    this.addedIn[slot] = this.moves + 1;
    this.codes.set(slot, record.embedding);
  }

  /**
   * Drops records found deleted, except those added again since `version`
   * was read (see there); unknown ids are ignored.
   */
  drop(ids: readonly string[], version: number): void {
    for (const id of ids) {
      const slot = this.slotOf.get(id);
      if (slot === undefined || (this.addedIn[slot] as number) > version) continue;
      this.slotOf.delete(id);
      this.live[slot] = 0;
      this.dead += 1;
    }
    if (this.dead > 1024 && this.dead > this.slotOf.size) this.compact();
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
    const slots = this.ids.length;
    if (this.maybe.length < slots) this.maybe = new Uint8Array(this.live.length);
    const maybe = this.maybe;
    const now = visibility.now.getTime();
    const owner = this.ownerKeys.get(principalKey(visibility)) ?? -1;
    const org = this.orgKeys.get(visibility.orgId ?? '') ?? -1;
    for (let slot = 0; slot < slots; slot += 1) {
      let yes = 0;
      if (this.live[slot] === 1 && (this.expiries[slot] as number) > now) {
        const scope = this.scopes[slot];
        // Others' shared records may carry a grant for the caller: SQL decides.
        if (this.owners[slot] === owner || scope === GLOBAL || scope === SHARED) yes = 1;
        else if (scope === PUBLIC) yes = this.orgs[slot] === org ? 1 : 0;
      }
      maybe[slot] = yes;
    }
    const found: Candidates | null = this.codes.candidates(vector, maybe, slots, limit);
    if (found === null) return null;
    return { ids: found.slots.map((slot) => this.ids[slot] as string), settles: found.settles };
  }

  private grow(capacity: number): void {
    const copy = <T extends Int32Array | Uint8Array | Float64Array>(from: T, to: T): T => {
      to.set(from);
      return to;
    };
    this.owners = copy(this.owners, new Int32Array(capacity));
    this.orgs = copy(this.orgs, new Int32Array(capacity));
    this.scopes = copy(this.scopes, new Uint8Array(capacity));
    this.expiries = copy(this.expiries, new Float64Array(capacity));
    this.live = copy(this.live, new Uint8Array(capacity));
    this.addedIn = copy(this.addedIn, new Int32Array(capacity));
    this.codes.grow(capacity);
  }

  /** Renumbers the live records from 0. */
  private compact(): void {
    const ids: string[] = [];
    for (let slot = 0; slot < this.ids.length; slot += 1) {
      if (this.live[slot] !== 1) continue;
      const to = ids.length;
      const id = this.ids[slot] as string;
      ids.push(id);
      this.slotOf.set(id, to);
      this.owners[to] = this.owners[slot] as number;
      this.orgs[to] = this.orgs[slot] as number;
      this.scopes[to] = this.scopes[slot] as number;
      this.expiries[to] = this.expiries[slot] as number;
      this.live[to] = 1;
      this.addedIn[to] = this.addedIn[slot] as number;
      this.codes.move(slot, to);
    }
    this.live.fill(0, ids.length);
    this.ids = ids;
    this.dead = 0;
  }
}

function intern(keys: Map<string, number>, key: string): number {
  let n = keys.get(key);
  if (n === undefined) {
    n = keys.size;
    keys.set(key, n);
  }
  return n;
}
