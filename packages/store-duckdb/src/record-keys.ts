import type { NewRecord } from '@mnemo/core';

/**
 * Supersets of the dedup keys and the ids of every record the file holds,
 * as numbers of 52 bits, loaded on the first write: a key or id not in them
 * is not in the file, so most writes skip the lookup. A superset is enough
 * (a collision, or a record deleted since, only costs the lookup), and this
 * process is the file's only writer, so they stay supersets as it adds what
 * it inserts.
 */
export class RecordKeys {
  private readonly dedupKeys = new Set<number>();
  private readonly ids = new Set<number>();

  add(dedupKey: string, id: string): void {
    this.dedupKeys.add(dedupPrefix(dedupKey));
    this.ids.add(idHash(id));
  }

  addRecords(records: readonly NewRecord[]): void {
    for (const { dedupKey, record } of records) this.add(dedupKey, record.id);
  }

  /** False when no record of the file carries `dedupKey`. */
  mayHaveDedupKey(dedupKey: string): boolean {
    return this.dedupKeys.has(dedupPrefix(dedupKey));
  }

  /** False when no record of the file has this id. */
  mayHaveId(id: string): boolean {
    return this.ids.has(idHash(id));
  }
}

/** A dedup key (SHA-256 hex) as a number: its first 52 bits. */
const dedupPrefix = (key: string): number => Number.parseInt(key.slice(0, 13), 16);

/** An id (any string) as a number of 52 bits: two 32-bit FNV-1a hashes with different seeds. */
function idHash(id: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ id.length;
  for (let i = 0; i < id.length; i += 1) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}
