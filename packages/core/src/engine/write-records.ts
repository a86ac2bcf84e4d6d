import { setImmediate as nextTurn } from 'node:timers/promises';
import { termFrequencies } from '../analyzer.js';
import { invalidInput } from '../errors.js';
import { contentHash, dedupKey } from '../hashing.js';
import type { IdGenerator } from '../ports/id-generator.js';
import type { NewRecord } from '../ports/memory-store.js';
import type { MemoryRecord } from '../records.js';
import { validateLabel } from '../validation.js';
import { embedTexts } from './embed.js';
import {
  handleContext,
  type MemoryHandle,
  type RecordDraft,
  type RememberResult,
} from './memory-handle.js';

/** Records prepared (embedded, hashed) and handed to the group commit at a time by the bulk path. */
export const WRITE_CHUNK_SIZE = 500;

/**
 * The one write path of records: embed and hash each chunk of 500, then hand
 * it to the engine's group commit (`WriteCoalescer`), which dedups, inserts
 * the new records and appends one `remember` audit event per record in one
 * transaction, possibly shared with other callers' writes. Results are in
 * input order; a draft whose dedup key matches a live record (or an earlier
 * draft) returns that record's id.
 *
 * The next chunk is embedded and hashed while the one before it is written
 * (so at most two chunks are held prepared), but handed to the group commit
 * only once that one has committed: a chunk that fails, in the embedder or
 * in the store, ends the call with the chunks before it committed and none
 * after it written.
 */
export async function writeRecords(
  handle: MemoryHandle,
  drafts: readonly RecordDraft[],
  now: Date,
  field: (index: number) => string = () => 'expiresAt',
): Promise<RememberResult[]> {
  drafts.forEach((draft, index) => {
    if (draft.expiresAt !== null && draft.expiresAt.getTime() <= now.getTime()) {
      throw invalidInput(field(index), 'must be in the future');
    }
  });
  if (drafts.length === 0) return [];
  const { writer } = handleContext(handle);
  const prepare = (start: number) =>
    prepareChunk(handle, drafts.slice(start, start + WRITE_CHUNK_SIZE), now);
  const results: RememberResult[] = [];
  let next = prepare(0);
  for (let start = 0; start < drafts.length; start += WRITE_CHUNK_SIZE) {
    const written = writer.write(handle.principal, await next, now);
    if (start + WRITE_CHUNK_SIZE < drafts.length) {
      next = prepare(start + WRITE_CHUNK_SIZE);
      // Awaited in the next iteration; when this chunk's write fails first, that failure is reported.
      next.catch(() => undefined);
    }
    try {
      results.push(...(await written));
    } catch (error) {
      // The call settles once the next chunk's preparation has: engine.close waits for it.
      await next.catch(() => undefined);
      throw error;
    }
  }
  return results;
}

/**
 * A chunk's records, embedded and hashed, ready for the group commit. The work
 * goes in slices of the embedder's batch size with a turn of the event loop
 * between them, so that the write of the chunk before (its statements and
 * their replies) goes on meanwhile instead of waiting for a CPU-bound embedder
 * to finish the whole chunk.
 */
async function prepareChunk(
  handle: MemoryHandle,
  drafts: readonly RecordDraft[],
  now: Date,
): Promise<NewRecord[]> {
  const { embedder } = handleContext(handle);
  const prepared: NewRecord[] = [];
  const slice = Math.max(1, embedder.maxBatchSize);
  for (let start = 0; start < drafts.length; start += slice) {
    if (start > 0) await nextTurn();
    const part = drafts.slice(start, start + slice);
    const vectors = embedder.semantic
      ? await embedTexts(
          embedder,
          part.map((draft) => draft.content),
        )
      : null;
    prepared.push(...prepareSlice(handle, part, vectors, now));
  }
  return prepared;
}

/** Records of `drafts` with their `vectors` (null: no embeddings), hashed and analyzed. */
function prepareSlice(
  handle: MemoryHandle,
  drafts: readonly RecordDraft[],
  vectors: readonly Float32Array[] | null,
  now: Date,
): NewRecord[] {
  const { ids } = handleContext(handle);
  const { principal } = handle;
  return drafts.map((draft, index): NewRecord => {
    const record: MemoryRecord = {
      id: generatedId(ids),
      agentId: principal.agentId,
      orgId: principal.orgId,
      content: draft.content,
      memoryType: draft.memoryType,
      scope: draft.scope,
      importance: draft.importance,
      tags: draft.tags,
      metadata: draft.metadata,
      embedding: vectors?.[index] ?? null,
      contentHash: '',
      threadId: draft.threadId,
      sourceType: draft.sourceType,
      createdAt: now,
      updatedAt: now,
      expiresAt: draft.expiresAt,
      deletedAt: null,
      accessCount: 0,
      lastAccessedAt: null,
    };
    record.contentHash = contentHash(record);
    const { terms, length } =
      draft.plan === null ? termFrequencies(record.content) : { terms: [], length: 0 };
    return {
      record,
      dedupKey: dedupKey(principal, record.scope, record.content, draft.plan?.payload ?? null),
      isPlan: draft.plan !== null,
      terms,
      docLength: length,
      planTokens: draft.plan?.tokens ?? null,
    };
  });
}

/**
 * A new record's id from the engine's generator, checked as `get` and `forget`
 * check the ids they are given, so a record can always be named again.
 */
function generatedId(ids: IdGenerator): string {
  return validateLabel('options.ids', ids(), 256);
}
