import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type AuditEvent, auditEventHash, GENESIS_HASH } from '../src/audit/audit-event.js';
import { contentHash, normalizeContent } from '../src/hashing.js';
import type { MemoryRecord } from '../src/records.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

const RECORD: MemoryRecord = {
  id: 'r1',
  agentId: 'a',
  orgId: 'acme',
  content: 'the printer is on floor 3',
  memoryType: 'semantic',
  scope: 'shared',
  importance: 0.75,
  tags: ['office', 'printer'],
  metadata: { room: 301 },
  embedding: new Float32Array([1, 0]),
  contentHash: '',
  threadId: 't1',
  sourceType: 'chat',
  createdAt: new Date('2026-01-01T00:00:00.000Z'),
  updatedAt: new Date('2026-01-02T00:00:00.000Z'),
  expiresAt: new Date('2027-01-01T00:00:00.000Z'),
  deletedAt: null,
  accessCount: 0,
  lastAccessedAt: null,
};

const EVENT: Omit<AuditEvent, 'hash'> = {
  id: 'e1',
  chain: 'acme/a',
  seq: 1,
  at: new Date('2026-01-01T00:00:00.000Z'),
  principal: 'acme/a',
  op: 'remember',
  recordIds: ['r1'],
  details: { scope: 'shared' },
  prevHash: GENESIS_HASH,
};

describe('contentHash', () => {
  it('is the SHA-256 of the canonical JSON of the fields that say what a record is and who sees it', () => {
    expect(contentHash(RECORD)).toBe(
      sha256(
        '{"agentId":"a","content":"the printer is on floor 3","createdAt":"2026-01-01T00:00:00.000Z",' +
          '"expiresAt":"2027-01-01T00:00:00.000Z","id":"r1","importance":0.75,"memoryType":"semantic",' +
          '"metadata":{"room":301},"orgId":"acme","scope":"shared","sourceType":"chat",' +
          '"tags":["office","printer"],"threadId":"t1"}',
      ),
    );
  });

  it('changes with every field it covers', () => {
    const changes: Partial<MemoryRecord>[] = [
      { id: 'r2' },
      { agentId: 'b' },
      { orgId: null },
      { content: 'the printer is on floor 4' },
      { memoryType: 'episodic' },
      { scope: 'private' },
      { importance: 0.5 },
      { tags: ['office'] },
      { metadata: { room: 302 } },
      { threadId: null },
      { sourceType: null },
      { createdAt: new Date('2026-01-01T00:00:00.001Z') },
      { expiresAt: null },
      { expiresAt: new Date('2027-01-02T00:00:00.000Z') },
    ];
    const hashes = changes.map((change) => contentHash({ ...RECORD, ...change }));
    expect(new Set([contentHash(RECORD), ...hashes]).size).toBe(changes.length + 1);
  });

  it('does not change with what the engine updates without rewriting the record', () => {
    const base = contentHash(RECORD);
    expect(
      [
        { embedding: null },
        { contentHash: 'x' },
        { updatedAt: new Date('2026-06-01T00:00:00.000Z') },
        { deletedAt: new Date('2026-06-01T00:00:00.000Z') },
        { accessCount: 7 },
        { lastAccessedAt: new Date('2026-06-01T00:00:00.000Z') },
      ].map((change) => contentHash({ ...RECORD, ...change })),
    ).toEqual(Array(6).fill(base));
  });
});

describe('auditEventHash', () => {
  it('is the SHA-256 of the canonical JSON of every field but the hash', () => {
    expect(auditEventHash(EVENT)).toBe(
      sha256(
        '{"at":"2026-01-01T00:00:00.000Z","chain":"acme/a","details":{"scope":"shared"},"id":"e1",' +
          `"op":"remember","prevHash":"${GENESIS_HASH}","principal":"acme/a","recordIds":["r1"],"seq":1}`,
      ),
    );
  });

  it('changes with every field', () => {
    const changes: Partial<AuditEvent>[] = [
      { id: 'e2' },
      { chain: 'acme/b' },
      { seq: 2 },
      { at: new Date('2026-01-01T00:00:00.001Z') },
      { principal: 'acme/b' },
      { op: 'forget' },
      { recordIds: ['r2'] },
      { recordIds: ['r1', 'r2'] },
      { details: {} },
      { prevHash: 'f'.repeat(64) },
    ];
    const hashes = changes.map((change) => auditEventHash({ ...EVENT, ...change }));
    expect(new Set([auditEventHash(EVENT), ...hashes]).size).toBe(changes.length + 1);
  });
});

describe('normalizeContent', () => {
  it('collapses and trims every Unicode White_Space character (NEL too) and the BOM, as a blank check does', () => {
    expect(normalizeContent('\uFEFF  Note\u0085\u2003THE\u00A0Printer\t\n')).toBe(
      'note the printer',
    );
    expect(normalizeContent('a\u0085b')).toBe(normalizeContent('a b'));
  });
});
