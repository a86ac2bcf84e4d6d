import type { PlanAccess } from '@mnemo/core';
import type { PlanPayload } from './plan.js';

/**
 * The content hash of each chunk as the caller sees it now, or null for an id
 * naming no record the caller can see. One store round trip.
 */
export async function chunkHashes(
  access: PlanAccess,
  chunkIds: readonly string[],
): Promise<(string | null)[]> {
  const ids = [...new Set(chunkIds)];
  const hashes = new Map<string, string>();
  for (let start = 0; start < ids.length; start += LOOKUP_BATCH) {
    for (const record of await access.getMany(ids.slice(start, start + LOOKUP_BATCH)))
      hashes.set(record.id, record.contentHash);
  }
  return chunkIds.map((id) => hashes.get(id) ?? null);
}

const LOOKUP_BATCH = 10_000;

/**
 * Whether a plan's chunks changed since it was cached, as seen by `access`'s caller:
 * a chunk recorded with a hash must still be visible to the caller with that
 * same hash. Forgotten (soft or hard), redacted and expired records are not
 * visible, and a record the caller cannot see counts as missing: replaying a
 * plan must never hand out what a fresh retrieval by the same caller could not
 * return. Ids that named no visible record when the plan was cached (null
 * hash) are not mnemo chunks and are not checked. Plans cached before hashes
 * were kept only require every chunk to be visible.
 */
export async function isStale(access: PlanAccess, payload: PlanPayload): Promise<boolean> {
  const now = await chunkHashes(access, payload.chunk_ids);
  const then = payload.chunk_hashes;
  return now.some((hash, index) => {
    if (then === undefined) return hash === null;
    const recorded = then[index];
    return recorded !== null && recorded !== hash;
  });
}
