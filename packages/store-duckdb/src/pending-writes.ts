import { type AuditHead, compareByteOrder } from '@mnemo/core';
import type { JournalFrame } from './journal.js';

interface PendingRecord {
  readonly id: string;
  readonly contentHash: string;
  readonly expiresAt: Date | null;
  readonly seq: number;
}

/**
 * The frames acknowledged through the journal and not yet in the database
 * file, with what a transaction needs to know of them without reading the
 * file: their records by dedup key and id, and the chain heads they advance.
 * A frame leaves only once the transaction holding it has committed, so the
 * file and this always hold every acknowledged write between them.
 */
export class PendingWrites {
  readonly frames: JournalFrame[] = [];
  private readonly byKey = new Map<string, PendingRecord[]>();
  private readonly ids = new Set<string>();
  private readonly heads = new Map<string, { head: AuditHead; seq: number }>();
  // Seq of the last frame with records, while it is pending.
  private recordsUpTo: number | null = null;
  /** Records in `frames`. */
  records = 0;

  add(frame: JournalFrame): void {
    this.frames.push(frame);
    this.records += frame.records.length;
    if (frame.records.length > 0) this.recordsUpTo = frame.seq;
    for (const { record, dedupKey } of frame.records) {
      this.ids.add(record.id);
      if (record.deletedAt !== null) continue;
      const entry = {
        id: record.id,
        contentHash: record.contentHash,
        expiresAt: record.expiresAt,
        seq: frame.seq,
      };
      this.byKey.set(dedupKey, [...(this.byKey.get(dedupKey) ?? []), entry]);
    }
    for (const event of frame.events) {
      this.heads.set(event.chain, {
        head: { chain: event.chain, seq: event.seq, hash: event.hash },
        seq: frame.seq,
      });
    }
  }

  /**
   * The first frames up to seq `upTo`, holding at most `maxRecords` records
   * (the first frame always).
   */
  take(maxRecords: number, upTo = Number.POSITIVE_INFINITY): JournalFrame[] {
    let records = 0;
    let count = 0;
    for (const frame of this.frames) {
      if (frame.seq > upTo || (count > 0 && records + frame.records.length > maxRecords)) break;
      records += frame.records.length;
      count += 1;
    }
    return this.frames.slice(0, count);
  }

  /** Drops `frames`, the first ones, now committed to the file. */
  applied(frames: readonly JournalFrame[]): void {
    const last = frames.at(-1)?.seq;
    if (last === undefined) return;
    this.frames.splice(0, frames.length);
    for (const frame of frames) {
      this.records -= frame.records.length;
      for (const { record, dedupKey } of frame.records) {
        this.ids.delete(record.id);
        const left = (this.byKey.get(dedupKey) ?? []).filter((entry) => entry.seq > last);
        if (left.length === 0) this.byKey.delete(dedupKey);
        else this.byKey.set(dedupKey, left);
      }
    }
    for (const [chain, { seq }] of this.heads) if (seq <= last) this.heads.delete(chain);
    if (this.recordsUpTo !== null && this.recordsUpTo <= last) this.recordsUpTo = null;
  }

  /** Seq of the last frame, or null when none is pending. */
  lastSeq(): number | null {
    return this.frames.at(-1)?.seq ?? null;
  }

  /** Seq of the last frame that inserts records, or null when none such is pending. */
  lastRecordsSeq(): number | null {
    return this.recordsUpTo;
  }

  hasId(id: string): boolean {
    return this.ids.has(id);
  }

  /** The head of `chain` as the pending frames leave it, if they advance it. */
  head(chain: string): AuditHead | undefined {
    return this.heads.get(chain)?.head;
  }

  /**
   * Adds to `found` (live duplicates as the file has them, by dedup key) the
   * pending records live at `now`, keeping per key the smallest id, as the
   * store's query does.
   */
  addLiveDuplicates(
    found: Map<string, { id: string; contentHash: string }>,
    dedupKeys: readonly string[],
    now: Date,
  ): Map<string, { id: string; contentHash: string }> {
    for (const key of dedupKeys) {
      for (const entry of this.byKey.get(key) ?? []) {
        if (entry.expiresAt !== null && entry.expiresAt.getTime() <= now.getTime()) continue;
        addSmallestIds(found, [[key, { id: entry.id, contentHash: entry.contentHash }]]);
      }
    }
    return found;
  }
}

/** Adds `duplicates` to `found`, keeping per dedup key the smallest id. */
export function addSmallestIds(
  found: Map<string, { id: string; contentHash: string }>,
  duplicates: Iterable<[string, { id: string; contentHash: string }]>,
): void {
  for (const [key, duplicate] of duplicates) {
    const current = found.get(key);
    if (current === undefined || compareByteOrder(duplicate.id, current.id) < 0)
      found.set(key, duplicate);
  }
}
