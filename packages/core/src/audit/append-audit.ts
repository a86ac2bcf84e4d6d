import { principalKey } from '../hashing.js';
import type { IdGenerator } from '../ports/id-generator.js';
import type { StoreTx } from '../ports/memory-store.js';
import type { JsonObject, Principal } from '../records.js';
import { type AuditOp, chainEvent } from './audit-event.js';

export interface AuditEntry {
  op: AuditOp;
  recordIds: string[];
  details: JsonObject;
  /** When the operation happened, if not the `at` of the whole call. */
  at?: Date;
}

/**
 * Appends `entries`, chained in order, to `principal`'s chain inside `tx`:
 * reads (and, where writers race, locks) the chain head, hashes each event
 * onto the previous one, and hands them to the store in one call.
 */
export async function appendAuditEntries(
  tx: StoreTx,
  ids: IdGenerator,
  principal: Principal,
  at: Date,
  entries: readonly AuditEntry[],
): Promise<void> {
  if (entries.length === 0) return;
  const chain = principalKey(principal);
  let head = await tx.auditHead(chain);
  const events = entries.map((entry) => {
    const { op, recordIds, details } = entry;
    const event = chainEvent(head, {
      id: ids(),
      chain,
      at: entry.at ?? at,
      principal: chain,
      op,
      recordIds,
      details,
    });
    head = { chain, seq: event.seq, hash: event.hash };
    return event;
  });
  await tx.appendAudit(events);
}
