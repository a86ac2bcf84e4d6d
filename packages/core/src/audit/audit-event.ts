import { canonicalJson, sha256Hex } from '../canonical.js';
import type { JsonObject } from '../records.js';

export const AUDIT_OPS = [
  'remember',
  'recall',
  'forget',
  'share',
  'recall_plan',
  'import',
  'plan_outcome',
] as const;
export type AuditOp = (typeof AUDIT_OPS)[number];

/** The `prevHash` of the first event of every chain. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * One entry of the audit log. Events form one hash chain per principal, so
 * agents never wait on each other's chain.
 */
export interface AuditEvent {
  id: string;
  /** The chain: the principal key of the acting agent. */
  chain: string;
  /** Position in the chain, from 1, without gaps. */
  seq: number;
  at: Date;
  /** Principal key (`agentId`, or `orgId/agentId`). */
  principal: string;
  op: AuditOp;
  recordIds: string[];
  details: JsonObject;
  /** `hash` of the previous event of the chain, or `GENESIS_HASH`. */
  prevHash: string;
  /** SHA-256 hex of the canonical serialization of every other field. */
  hash: string;
}

export interface AuditHead {
  chain: string;
  seq: number;
  hash: string;
}

export function auditEventHash(event: Omit<AuditEvent, 'hash'>): string {
  return sha256Hex(
    canonicalJson({
      id: event.id,
      chain: event.chain,
      seq: event.seq,
      at: event.at,
      principal: event.principal,
      op: event.op,
      recordIds: event.recordIds,
      details: event.details,
      prevHash: event.prevHash,
    }),
  );
}

/** Builds the event that follows `head` (or starts a chain). */
export function chainEvent(
  head: AuditHead | null,
  fields: Omit<AuditEvent, 'seq' | 'prevHash' | 'hash'>,
): AuditEvent {
  const unsigned = {
    ...fields,
    seq: (head?.seq ?? 0) + 1,
    prevHash: head?.hash ?? GENESIS_HASH,
  };
  return { ...unsigned, hash: auditEventHash(unsigned) };
}
