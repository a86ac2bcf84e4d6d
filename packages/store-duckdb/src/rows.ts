import {
  type AuditEvent,
  type Grant,
  type JsonObject,
  type MemoryRecord,
  type MemoryType,
  permissionFromLevel,
  type Scope,
} from '@mnemo/core';
import type { Row } from './chunks.js';

const time = (value: Row[string] | undefined): Date | null =>
  value === null || value === undefined ? null : new Date(Number(value));

export function rowToRecord(row: Row): MemoryRecord {
  return {
    id: row.id as string,
    agentId: row.agent_id as string,
    orgId: row.org_id as string | null,
    content: row.content as string,
    memoryType: row.memory_type as MemoryType,
    scope: row.scope as Scope,
    importance: row.importance as number,
    tags: row.tags as string[],
    metadata: JSON.parse(row.metadata as string) as JsonObject,
    embedding: row.embedding as Float32Array | null,
    contentHash: row.content_hash as string,
    threadId: row.thread_id as string | null,
    sourceType: row.source_type as string | null,
    createdAt: time(row.created_at) as Date,
    updatedAt: time(row.updated_at) as Date,
    expiresAt: time(row.expires_at),
    deletedAt: time(row.deleted_at),
    accessCount: Number(row.access_count),
    lastAccessedAt: time(row.last_accessed_at),
  };
}

export function rowToAuditEvent(row: Row): AuditEvent {
  return {
    id: row.id as string,
    chain: row.chain as string,
    seq: Number(row.seq),
    at: time(row.occurred_at) as Date,
    principal: row.principal as string,
    op: row.op as AuditEvent['op'],
    recordIds: JSON.parse(row.record_ids as string) as string[],
    details: JSON.parse(row.details as string) as JsonObject,
    prevHash: row.prev_hash as string,
    hash: row.hash as string,
  };
}

export function rowToGrant(row: Row): Grant {
  return {
    recordId: row.record_id as string,
    granteeAgentId: row.grantee_agent_id as string,
    granteeOrgId: row.grantee_org_id as string | null,
    permission: permissionFromLevel(Number(row.level)) ?? 'read',
    grantedBy: row.granted_by as string,
    createdAt: time(row.created_at) as Date,
    expiresAt: time(row.expires_at),
  };
}
