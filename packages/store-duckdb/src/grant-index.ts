import type { Grant } from '@mnemo/core';

/** A principal as one string: its org (empty for none) and its agent id. */
export const principalKey = (agentId: string, orgId: string | null) =>
  `${orgId ?? ''}\u0000${agentId}`;

/**
 * The grants on the records an in-memory index holds (PlanIndex,
 * SearchIndex): record id → grantee (`principalKey`) → expiry in ms, or null
 * for none. One grant per record and grantee, as `putGrants` keeps them.
 */
export class GrantIndex {
  private readonly byRecord = new Map<string, Map<string, number | null>>();

  clear(): void {
    this.byRecord.clear();
  }

  /** Records a grant, replacing one for the same record and grantee. */
  put(grant: Grant): void {
    let byGrantee = this.byRecord.get(grant.recordId);
    if (byGrantee === undefined) {
      byGrantee = new Map();
      this.byRecord.set(grant.recordId, byGrantee);
    }
    byGrantee.set(
      principalKey(grant.granteeAgentId, grant.granteeOrgId),
      grant.expiresAt?.getTime() ?? null,
    );
  }

  /** Drops every grant on a record. */
  delete(recordId: string): void {
    this.byRecord.delete(recordId);
  }

  /** True when the record has a grant to `grantee` (a `principalKey`) still live at `now` (ms). */
  live(recordId: string, grantee: string, now: number): boolean {
    const expires = this.byRecord.get(recordId)?.get(grantee);
    return expires !== undefined && (expires === null || expires > now);
  }
}
