import { contentHash } from '../hashing.js';
import type { MemoryRecord } from '../records.js';
import { START } from './conformance/harness.js';

/**
 * A complete record for tests that build records by hand (imports, a store's
 * own port tests): agent `a`'s private, live, semantic memory written at
 * `START`, with `fields` over those defaults and its content hash computed
 * over the result.
 */
export function memoryRecord(fields: Partial<MemoryRecord> = {}): MemoryRecord {
  const record: MemoryRecord = {
    id: 'r1',
    agentId: 'a',
    orgId: null,
    content: 'a record',
    memoryType: 'semantic',
    scope: 'private',
    importance: 0.5,
    tags: [],
    metadata: {},
    embedding: null,
    contentHash: '',
    threadId: null,
    sourceType: null,
    createdAt: new Date(START),
    updatedAt: new Date(START),
    expiresAt: null,
    deletedAt: null,
    accessCount: 0,
    lastAccessedAt: null,
    ...fields,
  };
  return { ...record, contentHash: contentHash(record) };
}
