import { principalKey } from '../hashing.js';
import type { IdGenerator } from '../ports/id-generator.js';
import type { StoreTx } from '../ports/memory-store.js';
import type { JsonObject, MemoryRecord, Principal } from '../records.js';
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

/**
 * For an operator's write over records of many owners (an import, a purge):
 * appends `entries(owned)` to each owner's chain, `owned` being that owner's
 * records in the order given. Chains go in a fixed order, so that two such
 * transactions never lock chain heads in opposite orders.
 */
export async function appendOwnersEntries(
  tx: StoreTx,
  ids: IdGenerator,
  records: readonly MemoryRecord[],
  at: Date,
  entries: (owned: readonly MemoryRecord[]) => readonly AuditEntry[],
): Promise<void> {
  const byOwner = new Map<string, MemoryRecord[]>();
  for (const record of records) {
    const key = principalKey({ agentId: record.agentId, orgId: record.orgId });
    const owned = byOwner.get(key);
    if (owned === undefined) byOwner.set(key, [record]);
    else owned.push(record);
  }
  for (const key of [...byOwner.keys()].sort()) {
    const owned = byOwner.get(key) as [MemoryRecord, ...MemoryRecord[]];
    const { agentId, orgId } = owned[0];
    await appendAuditEntries(tx, ids, { agentId, orgId }, at, entries(owned));
  }
}
