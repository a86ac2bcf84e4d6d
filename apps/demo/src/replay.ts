import type { MemoryHandle, MemoryRecord } from '@mnemo/core';

export interface Replay {
  /** The plan's chunks still visible to the caller, in the plan's order. */
  records: MemoryRecord[];
  /** Chunk ids of the plan that are gone (forgotten since the plan was cached). */
  missing: string[];
}

/**
 * Replays a cached plan: fetches its chunks by id in one `getMany` instead of
 * running retrieval again. A chunk forgotten since is reported as missing.
 */
export async function replayPlan(
  handle: MemoryHandle,
  chunkIds: readonly string[],
): Promise<Replay> {
  const records = await handle.getMany(chunkIds);
  const found = new Set(records.map((record) => record.id));
  return { records, missing: chunkIds.filter((id) => !found.has(id)) };
}
