import type { AuditHead, AuditProblem, JsonObject, MemoryRecord, RecallResult } from '@mnemo/core';

/** A record as tools and `--json` show it: snake_case, ISO dates, no embedding. */
export interface RenderedRecord {
  id: string;
  agent_id: string;
  org_id: string | null;
  content: string;
  memory_type: MemoryRecord['memoryType'];
  scope: MemoryRecord['scope'];
  importance: number;
  tags: string[];
  metadata: JsonObject;
  content_hash: string;
  thread_id: string | null;
  source_type: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  deleted_at: string | null;
  access_count: number;
  last_accessed_at: string | null;
}

export const isoOrNull = (value: Date | null): string | null =>
  value === null ? null : value.toISOString();

export function renderRecord(record: MemoryRecord): RenderedRecord {
  return {
    id: record.id,
    agent_id: record.agentId,
    org_id: record.orgId,
    content: record.content,
    memory_type: record.memoryType,
    scope: record.scope,
    importance: record.importance,
    tags: record.tags,
    metadata: record.metadata,
    content_hash: record.contentHash,
    thread_id: record.threadId,
    source_type: record.sourceType,
    created_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
    expires_at: isoOrNull(record.expiresAt),
    deleted_at: isoOrNull(record.deletedAt),
    access_count: record.accessCount,
    last_accessed_at: isoOrNull(record.lastAccessedAt),
  };
}

export function renderRecall(result: RecallResult) {
  return {
    strategy: result.strategy,
    hits: result.hits.map((hit) => ({
      record: renderRecord(hit.record),
      score: hit.score,
      ...(hit.explain === undefined ? {} : { explain: hit.explain }),
    })),
  };
}

export function renderProblem(problem: AuditProblem) {
  return {
    kind: problem.kind,
    chain: problem.chain,
    seq: problem.seq,
    event_id: problem.eventId,
    message: problem.message,
  };
}

export function renderHead(head: AuditHead) {
  return { chain: head.chain, seq: head.seq, hash: head.hash };
}
