import type { MemoryHandle, RememberInput } from '@mnemo/core';
import type { Chunk } from './chunk.js';
import type { Progress } from './progress.js';

export interface IngestResult {
  /** Chunks remembered. */
  chunks: number;
  /** Of those, chunks whose normalized text a record already held (its id returned, nothing written). */
  deduplicated: number;
}

/** Chunks written per `rememberMany` call (one transaction each), and per progress update. */
export const INGEST_BATCH = 10;

/** The record a chunk becomes: private semantic memory tagged 'doc', with its source and heading path. */
export function chunkRecord(chunk: Chunk): RememberInput {
  return {
    content: chunk.text,
    memoryType: 'semantic',
    scope: 'private',
    tags: ['doc'],
    metadata: { source: chunk.source, heading: chunk.heading },
  };
}

/** Remembers every chunk, `INGEST_BATCH` at a time, updating the progress line after each batch. */
export async function ingestChunks(
  handle: MemoryHandle,
  chunks: readonly Chunk[],
  progress: Progress,
): Promise<IngestResult> {
  let deduplicated = 0;
  for (let start = 0; start < chunks.length; start += INGEST_BATCH) {
    const results = await handle.rememberMany(
      chunks.slice(start, start + INGEST_BATCH).map(chunkRecord),
    );
    deduplicated += results.filter((result) => result.deduplicated).length;
    progress.update(
      `ingesting ${chunks.length} chunks: ${start + results.length}/${chunks.length}`,
    );
  }
  progress.line(`ingested ${chunks.length} chunks (${deduplicated} already stored)`);
  return { chunks: chunks.length, deduplicated };
}
