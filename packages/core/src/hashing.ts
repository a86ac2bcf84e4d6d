import { canonicalJson, sha256Hex } from './canonical.js';
import type { JsonObject, MemoryRecord, Principal } from './records.js';

/** The fields `contentHash` covers: everything that decides what a record says and who sees it. */
export function recordHashFields(record: MemoryRecord): JsonObject {
  return {
    id: record.id,
    agentId: record.agentId,
    orgId: record.orgId,
    content: record.content,
    memoryType: record.memoryType,
    scope: record.scope,
    importance: record.importance,
    tags: record.tags,
    metadata: record.metadata,
    threadId: record.threadId,
    sourceType: record.sourceType,
    createdAt: record.createdAt.toISOString(),
    expiresAt: record.expiresAt?.toISOString() ?? null,
  };
}

/** SHA-256 hex over the canonical serialization of `recordHashFields`. */
export function contentHash(record: MemoryRecord): string {
  return sha256Hex(canonicalJson(recordHashFields(record)));
}

/** Unicode White_Space and the BOM, as the blank check has them: `\s` misses U+0085 NEXT LINE. */
const SPACES = /[\p{White_Space}\uFEFF]+/gu;

/** Content as compared for dedup: NFKC, lowercased, whitespace collapsed and trimmed. */
export function normalizeContent(content: string): string {
  return content.normalize('NFKC').toLowerCase().replace(SPACES, ' ').trim();
}

/**
 * Two records are the same memory when owner, scope, normalized content and
 * (for plans) the plan payload are equal.
 */
export function dedupKey(
  owner: Principal,
  scope: string,
  content: string,
  plan: JsonObject | null,
): string {
  return sha256Hex(
    canonicalJson({
      agentId: owner.agentId,
      orgId: owner.orgId,
      scope,
      content: normalizeContent(content),
      plan,
    }),
  );
}

/** The audit chain and principal key: `agentId`, or `orgId/agentId` (ids cannot contain `/`). */
export function principalKey(principal: Principal): string {
  return principal.orgId === null ? principal.agentId : `${principal.orgId}/${principal.agentId}`;
}
