import { principalKey, type Visibility } from '@mnemo/core';

/** What every in-process cache keeps of a record: its id and the owner part of visibility. */
export interface CachedOwner {
  readonly id: string;
  readonly agentId: string;
  readonly orgId: string | null;
  readonly scope: string;
  /** Unix ms, or null for none. */
  readonly expiresAt: number | null;
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
   * changes it, and the ids above then mean nothing. A snapshot that finds
   * no token (a crash right after it was looked for) gets a random one, which
   * no later run matches.
   */
  readonly run: string;
}

/** New records a cache takes in before its sweep checks more of those it holds (see `sweep`). */
const SWEEP_EVERY = 1_000;
/** The most records one sweep checks. */
const SWEEP_MOST = 20_000;

const SHARED = 1;
const PUBLIC = 2;
const GLOBAL = 3;
export const SCOPES: readonly string[] = ['private', 'shared', 'public', 'global'];

/**
 * The part the vector and lexical caches share (see VectorCache and
 * LexicalCache): a slot per held record, with its owner, org, scope and
 * expiry; the feed position the records were read up to; records found
 * deleted dropped, and the slots renumbered once many are dead (the
 * subclass moves what it keeps per slot in `renumbered`); and the sweep that
 * finds the deleted records no search meets (see `sweep`).
 */
export abstract class CachedRecords {
  protected ids: string[] = [];
  protected readonly slotOf = new Map<string, number>();
  private owners = new Int32Array(0);
  private orgs = new Int32Array(0);
  protected scopes = new Uint8Array(0);
  /** Expiry in ms since the epoch, Infinity for none. */
  private expiries = new Float64Array(0);
  protected live = new Uint8Array(0);
  /** Per slot, the position its record was added toward (`moves` + 1 when added; see `drop`). */
  private addedIn = new Int32Array(0);
  private dead = 0;
  /** How many records `drop` has dropped, ever (see `drops`). */
  private dropped = 0;
  private readonly ownerKeys = new Map<string, number>();
  private readonly orgKeys = new Map<string, number>();
  /** Where the next refresh reads from; null until the first load. */
  private at: FeedPosition | null = null;
  /** How many times the position has moved (see `drop`). */
  private moves = 0;
  /** Slots made since the first load that no sweep has answered for yet (see `sweep`). */
  private unswept = 0;
  /** The slot the next sweep starts from. */
  private sweepFrom = 0;

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

  /**
   * How many records have been dropped so far: equal before and after an
   * await, the cache still holds every record it held before (a refresh may
   * have added some).
   */
  get drops(): number {
    return this.dropped;
  }

  /** How many slots are in use (live or dead). */
  protected get slots(): number {
    return this.ids.length;
  }

  /** Makes room for `capacity` slots in what the subclass keeps per slot. */
  protected abstract resize(capacity: number): void;

  /**
   * After a compaction: `to[slot]` is the new slot of each old one (-1 for
   * the dropped), in increasing order, `count` of them live.
   */
  protected abstract renumbered(to: Int32Array, count: number): void;

  /**
   * Takes a record's owner part into its slot (a new one, or the one of its
   * id: a refresh reads some records again, and a record deleted outright
   * can come back under its id by an import), and returns the slot.
   */
  protected place(record: CachedOwner): number {
    let slot = this.slotOf.get(record.id);
    if (slot === undefined) {
      slot = this.ids.length;
      if (slot === this.live.length) this.grow(Math.max(1024, slot * 2));
      this.ids.push(record.id);
      this.slotOf.set(record.id, slot);
      if (this.at !== null) this.unswept += 1;
    }
    this.owners[slot] = intern(this.ownerKeys, principalKey(record));
    this.orgs[slot] = intern(this.orgKeys, record.orgId ?? '');
    this.scopes[slot] = SCOPES.indexOf(record.scope);
    this.expiries[slot] = record.expiresAt ?? Number.POSITIVE_INFINITY;
    this.live[slot] = 1;
    this.addedIn[slot] = this.moves + 1;
    return slot;
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
      this.dropped += 1;
    }
    if (this.dead > 1024 && this.dead > this.slotOf.size) this.compact();
  }

  /**
   * The ids of the held records to check against the table next, and the
   * `version` to `drop` those found deleted by; null until the cache has
   * made `SWEEP_EVERY` new slots since the last sweep (or its first load).
   *
   * A record deleted or purged is dropped when a search finds it among its
   * candidates and missing; one that no search ranks would stay until the
   * process ends, so a process following a store whose records come and go
   * (expiring and purged, say) would grow without end. A sweep checks twice
   * as many held records as new slots were made, going on from where the
   * last one stopped, round the slots (each at most once a sweep; `SWEEP_MOST`
   * at once, the rest at the next). A record deleted is then dropped before
   * the cache has made new slots for half of the slots it holds, so the
   * slots held stay under about twice the records live in the table, while
   * the table itself does not grow.
   */
  sweep(): { ids: string[]; version: number } | null {
    if (this.unswept < SWEEP_EVERY) return null;
    const taken = Math.min(this.unswept, SWEEP_MOST / 2);
    this.unswept -= taken;
    const slots = this.ids.length;
    const ids: string[] = [];
    let slot = this.sweepFrom;
    let passed = 0;
    for (; passed < slots && ids.length < 2 * taken; passed += 1) {
      if (this.live[slot] === 1) ids.push(this.ids[slot] as string);
      slot = slot + 1 === slots ? 0 : slot + 1;
    }
    // Round every slot: every record made so far is answered for.
    if (passed === slots) this.unswept = 0;
    this.sweepFrom = slot;
    return { ids, version: this.version };
  }

  /**
   * A test of whether the record in a slot may be visible to the caller: a
   * superset of the visible records (the visibility rule's grants are not
   * kept): live, unexpired, and owned, global, public in the caller's org,
   * or shared (with anyone: SQL decides).
   */
  protected mayBeVisible(visibility: Visibility): (slot: number) => boolean {
    const now = visibility.now.getTime();
    const owner = this.ownerKeys.get(principalKey(visibility)) ?? -1;
    const org = this.orgKeys.get(visibility.orgId ?? '') ?? -1;
    return (slot) => {
      if (this.live[slot] !== 1 || (this.expiries[slot] as number) <= now) return false;
      const scope = this.scopes[slot];
      if (this.owners[slot] === owner || scope === GLOBAL || scope === SHARED) return true;
      return scope === PUBLIC && this.orgs[slot] === org;
    };
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
    this.resize(capacity);
  }

  /** Renumbers the live records from 0; the sweep goes on from the same record. */
  private compact(): void {
    const ids: string[] = [];
    const to = new Int32Array(this.ids.length).fill(-1);
    let sweepFrom = 0;
    for (let slot = 0; slot < this.ids.length; slot += 1) {
      if (slot === this.sweepFrom) sweepFrom = ids.length;
      if (this.live[slot] !== 1) continue;
      const next = ids.length;
      const id = this.ids[slot] as string;
      to[slot] = next;
      ids.push(id);
      this.slotOf.set(id, next);
      this.owners[next] = this.owners[slot] as number;
      this.orgs[next] = this.orgs[slot] as number;
      this.scopes[next] = this.scopes[slot] as number;
      this.expiries[next] = this.expiries[slot] as number;
      this.live[next] = 1;
      this.addedIn[next] = this.addedIn[slot] as number;
    }
    this.live.fill(0, ids.length);
    this.sweepFrom = sweepFrom < ids.length ? sweepFrom : 0;
    this.ids = ids;
    this.dead = 0;
    this.renumbered(to, ids.length);
  }
}

export function intern(keys: Map<string, number>, key: string): number {
  let n = keys.get(key);
  if (n === undefined) {
    n = keys.size;
    keys.set(key, n);
  }
  return n;
}
