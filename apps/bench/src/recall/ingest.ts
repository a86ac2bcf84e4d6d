import type { MemoryHandle } from '@mnemo/core';
import type { Conversation } from './loader.js';

export interface IngestResult {
  /** Records written (turns whose normalized content repeats an earlier turn's are stored once). */
  records: number;
  /** Turns that the engine deduplicated into an earlier turn's record. */
  deduplicated: number;
  /**
   * Each turn's id mapped to the dia_id of the record that holds it: itself,
   * or the first turn with the same normalized content. Gold evidence is
   * mapped through it, so a deduplicated turn is found through its twin.
   */
  canonical: Map<string, string>;
}

/**
 * Stores every turn of `conversation` as a record of `handle`'s agent, in one
 * `rememberMany` call: content is the turn's text (see `Turn.content`),
 * metadata `{ dia_id, session, date }`. Reads the records back with `getMany`
 * and checks each one's `metadata.dia_id`, so a store that lost or changed a
 * record fails the run instead of skewing its figures.
 */
export async function ingestConversation(
  handle: MemoryHandle,
  conversation: Conversation,
): Promise<IngestResult> {
  const { turns } = conversation;
  const results = await handle.rememberMany(
    turns.map((turn) => ({
      content: turn.content,
      metadata: { dia_id: turn.diaId, session: turn.session, date: turn.date },
    })),
  );
  const owner = new Map<string, string>(); // record id → dia_id of the turn that created it
  const canonical = new Map<string, string>();
  let deduplicated = 0;
  results.forEach((result, index) => {
    const diaId = (turns[index] as (typeof turns)[number]).diaId;
    const first = owner.get(result.id);
    if (first === undefined) {
      if (result.deduplicated) {
        throw new Error(`turn ${diaId} was deduplicated into a record this run did not write`);
      }
      owner.set(result.id, diaId);
      canonical.set(diaId, diaId);
    } else {
      deduplicated += 1;
      canonical.set(diaId, first);
    }
  });
  const stored = await handle.getMany([...owner.keys()]);
  if (stored.length !== owner.size) {
    throw new Error(
      `${conversation.sampleId}: wrote ${owner.size} records but read back ${stored.length}`,
    );
  }
  for (const record of stored) {
    const stamped = recordDiaId(record.metadata);
    if (stamped !== owner.get(record.id)) {
      throw new Error(
        `${conversation.sampleId}: record ${record.id} came back with metadata.dia_id ${String(stamped)}, expected ${owner.get(record.id)}`,
      );
    }
  }
  return { records: owner.size, deduplicated, canonical };
}

/** The `dia_id` a record's metadata names, or undefined. */
export function recordDiaId(metadata: unknown): string | undefined {
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const value = (metadata as Record<string, unknown>).dia_id;
  return typeof value === 'string' ? value : undefined;
}
