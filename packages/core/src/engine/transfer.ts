import { termFrequencies } from '../analyzer.js';
import { appendOwnersEntries } from '../audit/append-audit.js';
import { canonicalJson } from '../canonical.js';
import { invalidInput } from '../errors.js';
import { contentHash, dedupKey } from '../hashing.js';
import type { Grant, NewRecord, PlanStats } from '../ports/memory-store.js';
import { type ExportedRecord, readRecordPage } from '../record-page.js';
import {
  isPlanRecord,
  type JsonObject,
  type MemoryRecord,
  PLAN_METADATA_KEY,
  planIndexTokens,
  REDACTED_CONTENT,
} from '../records.js';
import {
  checkKeys,
  embeddingProblem,
  validateArray,
  validateContent,
  validateDate,
  validateId,
  validateLabel,
  validateMemoryType,
  validateMetadata,
  validatePermission,
  validateScope,
  validateTags,
  validateUnitInterval,
} from '../validation.js';
import {
  checkEmbeddingDimensions,
  dimensionMismatch,
  storeEmbeddingDimensions,
} from './dimensions.js';
import type { EngineContext } from './engine-context.js';
import { WRITE_CHUNK_SIZE } from './write-records.js';

export type { ExportedRecord } from '../record-page.js';

/** The JSON form of an `ExportedRecord` (one NDJSON line of `mnemo export`). */
export const EXPORT_FORMAT = 'mnemo.record.v1';

export interface ImportResult {
  /** Records written. */
  imported: number;
  /** Records whose id already existed (left as they are). */
  skipped: number;
}

/**
 * Every record of the store with its grants (and a plan's stats), in id order,
 * page by page. Each page's reads are one call of the engine: `close()` waits
 * for the page being read, and the next one is `STORE_UNAVAILABLE`.
 */
export async function* exportRecords(
  context: EngineContext,
  pageSize = 500,
): AsyncGenerator<ExportedRecord> {
  let afterId: string | undefined;
  for (;;) {
    const page = await context.calls.run(() => readRecordPage(context.store, afterId, pageSize));
    yield* page;
    afterId = page.at(-1)?.record.id;
    if (page.length < pageSize) return;
  }
}

/** True for a record whose content was erased by `forget({ mode: 'redact' })`: its hash cannot be recomputed. */
function isRedacted(record: MemoryRecord): boolean {
  return record.deletedAt !== null && record.content === REDACTED_CONTENT;
}

/**
 * Writes exported records back, keeping every field (ids, timestamps, hashes,
 * access counts, deletion) and their grants, with one `import` audit event per
 * record in its owner's chain. Each record is validated like a `remember`
 * (reserved tags allowed, since plans are exported too) and its `contentHash`
 * must match its fields (redacted records excepted), so a tampered export is
 * rejected. Records whose id exists are skipped. Records are restored as
 * they were, not deduplicated: one with the content, owner and scope of a
 * live record under another id is written too, since grants and plans may
 * name it by its id. One transaction per 500 records.
 *
 * A synchronous iterable (an array) is validated whole before anything is
 * written: a bad item is `INVALID_INPUT` naming it (`records[7].record.scope`)
 * and changes nothing. An async iterable (a stream) is validated one chunk
 * ahead of its write, so a bad item fails the import with the chunks before it
 * written; importing the corrected input again skips them.
 */
export async function importRecords(
  context: EngineContext,
  records: Iterable<ExportedRecord> | AsyncIterable<ExportedRecord>,
): Promise<ImportResult> {
  const result: ImportResult = { imported: 0, skipped: 0 };
  const ids = new Set<string>();
  const check = (item: unknown, index: number) => {
    const where = `records[${index}]`;
    const checked = checkExported(item, where);
    if (ids.has(checked.record.id))
      throw invalidInput(`${where}.record.id`, `repeats record ${checked.record.id}`);
    ids.add(checked.record.id);
    return checked;
  };
  const write = async (batch: ExportedRecord[]) => {
    const { imported, skipped } = await importChunk(context, batch);
    result.imported += imported;
    result.skipped += skipped;
  };
  if (isSyncIterable(records)) {
    const all = Array.from(records as Iterable<unknown>, check);
    await checkImportDimensions(context, all);
    for (let start = 0; start < all.length; start += WRITE_CHUNK_SIZE) {
      await write(all.slice(start, start + WRITE_CHUNK_SIZE));
    }
    return result;
  }
  if (!isAsyncIterable(records))
    throw invalidInput('records', 'must be an iterable or async iterable of exported records');
  let chunk: ExportedRecord[] = [];
  let index = 0;
  for await (const item of records) {
    chunk.push(check(item, index));
    index += 1;
    if (chunk.length >= WRITE_CHUNK_SIZE) {
      await write(chunk);
      chunk = [];
    }
  }
  if (chunk.length > 0) await write(chunk);
  return result;
}

/**
 * Every embedding of `items` has one size, the store's if it has one: checked
 * before the first chunk is written, so a mismatch further on writes nothing.
 */
async function checkImportDimensions(
  context: EngineContext,
  items: readonly ExportedRecord[],
): Promise<void> {
  let first: { size: number; index: number } | null = null;
  for (const [index, { record }] of items.entries()) {
    if (record.embedding === null) continue;
    first ??= { size: record.embedding.length, index };
    if (record.embedding.length !== first.size) {
      throw invalidInput(
        `records[${index}].record.embedding`,
        `has ${record.embedding.length} dimensions, where records[${first.index}]'s has ${first.size}`,
      );
    }
  }
  if (first === null) return;
  const size = await storeEmbeddingDimensions(context.store);
  if (size !== null && size !== first.size) throw dimensionMismatch(size, first.size);
}

function isSyncIterable(value: unknown): value is Iterable<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<Iterable<unknown>>)[Symbol.iterator] === 'function'
  );
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] === 'function'
  );
}

async function importChunk(context: EngineContext, batch: ExportedRecord[]): Promise<ImportResult> {
  const now = context.clock.now();
  return context.store.transaction(async (tx) => {
    const existing = new Set(await tx.findIds(batch.map((item) => item.record.id)));
    const fresh = batch.filter((item) => !existing.has(item.record.id));
    const byId = new Map(fresh.map((item) => [item.record.id, item]));
    const rows = fresh.map(({ record }) => toNewRecord(record));
    await checkEmbeddingDimensions(tx, rows);
    await tx.insertRecords(rows);
    await tx.putGrants(fresh.flatMap((item) => item.grants));
    for (const { planStats } of fresh)
      if (planStats !== undefined) await tx.putPlanStats(planStats);
    await appendOwnersEntries(
      tx,
      context.ids,
      fresh.map(({ record }) => record),
      now,
      (owned) =>
        owned.map((record) => ({
          op: 'import',
          recordIds: [record.id],
          // The deletion state and the grants come with the record: recorded so `verifyRecords`
          // can tell them from tampering.
          details: {
            contentHash: record.contentHash,
            deleted: record.deletedAt !== null,
            redacted: isRedacted(record),
            // What is left of a redacted record, which its contentHash no longer covers.
            ...(isRedacted(record) ? { redactedHash: contentHash(record) } : {}),
            ...(isPlanRecord(record) ? { planStats: planStatsDetails(byId.get(record.id)) } : {}),
            grants: (byId.get(record.id)?.grants ?? []).map((grant) => ({
              grantee: grant.granteeAgentId,
              granteeOrgId: grant.granteeOrgId,
              permission: grant.permission,
              grantedBy: grant.grantedBy,
              createdAt: grant.createdAt.toISOString(),
              expiresAt: grant.expiresAt?.toISOString() ?? null,
            })),
          },
        })),
    );
    return { imported: fresh.length, skipped: batch.length - fresh.length };
  });
}

/** A plan's imported stats as its `import` event records them (null for none). */
function planStatsDetails(item: ExportedRecord | undefined): JsonObject | null {
  const stats = item?.planStats;
  if (stats === undefined) return null;
  return {
    runningOutcome: stats.runningOutcome,
    replays: stats.replays,
    failures: stats.failures,
    updatedAt: stats.updatedAt.toISOString(),
  };
}

function toNewRecord(record: MemoryRecord): NewRecord {
  const plan = isPlanRecord(record);
  const payload = record.metadata[PLAN_METADATA_KEY];
  const tokens =
    plan && typeof payload === 'object' && payload !== null && !Array.isArray(payload)
      ? payload.signature_tokens
      : undefined;
  const searchable = !plan && record.deletedAt === null;
  const { terms, length } = searchable ? termFrequencies(record.content) : { terms: [], length: 0 };
  return {
    record,
    dedupKey: dedupKey(
      record,
      record.scope,
      record.content,
      plan ? ((payload ?? null) as JsonObject | null) : null,
    ),
    isPlan: plan,
    terms,
    docLength: length,
    // A payload written by hand or by another implementation may repeat a token (see planIndexTokens).
    planTokens:
      plan && !isRedacted(record)
        ? Array.isArray(tokens)
          ? planIndexTokens(tokens.filter((t) => typeof t === 'string'))
          : []
        : null,
  };
}

/**
 * Validates an exported record as code may build it by hand (every field, as
 * `remember` would, reserved tags allowed; every grant) and checks its hash.
 * `where` names it in errors. Returns fresh copies.
 */
function checkExported(item: unknown, where: string): ExportedRecord {
  const line = checkKeys(where, item, ['record', 'grants', 'planStats']);
  const r = checkKeys(`${where}.record`, line.record, RECORD_KEYS);
  const f = (name: string) => `${where}.record.${name}`;
  const optionalDate = (name: string) => (r[name] === null ? null : validateDate(f(name), r[name]));
  const optionalLabel = (name: string) =>
    r[name] === null ? null : validateLabel(f(name), r[name], 256);
  const record: MemoryRecord = {
    id: validateLabel(f('id'), r.id, 256),
    agentId: validateId(f('agentId'), r.agentId),
    orgId: r.orgId === null ? null : validateId(f('orgId'), r.orgId),
    content: validateContent(f('content'), r.content, LIMITS),
    memoryType: validateMemoryType(f('memoryType'), r.memoryType),
    scope: validateScope(f('scope'), r.scope),
    importance: validateUnitInterval(f('importance'), r.importance),
    tags: validateTags(f('tags'), r.tags, LIMITS, true),
    metadata: validateMetadata(f('metadata'), r.metadata, LIMITS),
    embedding: checkEmbedding(f('embedding'), r.embedding),
    contentHash: checkHash(f('contentHash'), r.contentHash),
    threadId: optionalLabel('threadId'),
    sourceType: optionalLabel('sourceType'),
    createdAt: validateDate(f('createdAt'), r.createdAt),
    updatedAt: validateDate(f('updatedAt'), r.updatedAt),
    expiresAt: optionalDate('expiresAt'),
    deletedAt: optionalDate('deletedAt'),
    accessCount: checkCount(f('accessCount'), r.accessCount),
    lastAccessedAt: optionalDate('lastAccessedAt'),
  };
  if (!isRedacted(record) && contentHash(record) !== record.contentHash) {
    throw invalidInput(
      f('contentHash'),
      `does not match the record's fields (record ${record.id})`,
    );
  }
  const grants = validateArray(`${where}.grants`, line.grants, 100_000).map((raw, i): Grant => {
    const g = checkKeys(`${where}.grants[${i}]`, raw, GRANT_KEYS);
    const gf = (name: string) => `${where}.grants[${i}].${name}`;
    if (g.recordId !== record.id) throw invalidInput(gf('recordId'), "must be the record's id");
    // What `share` allows: another agent of the record's org, on a record that is not private.
    if (record.scope === 'private')
      throw invalidInput(`${where}.grants[${i}]`, 'a private record cannot be shared');
    const grant: Grant = {
      recordId: record.id,
      granteeAgentId: validateId(gf('granteeAgentId'), g.granteeAgentId),
      granteeOrgId: g.granteeOrgId === null ? null : validateId(gf('granteeOrgId'), g.granteeOrgId),
      permission: validatePermission(gf('permission'), g.permission),
      grantedBy: validateLabel(gf('grantedBy'), g.grantedBy, 600),
      createdAt: validateDate(gf('createdAt'), g.createdAt),
      expiresAt: g.expiresAt === null ? null : validateDate(gf('expiresAt'), g.expiresAt),
    };
    if (grant.granteeOrgId !== record.orgId)
      throw invalidInput(gf('granteeOrgId'), "must be the record's org");
    if (grant.granteeAgentId === record.agentId)
      throw invalidInput(gf('granteeAgentId'), "must not be the record's owner");
    return grant;
  });
  if (line.planStats === undefined) return { record, grants };
  return {
    record,
    grants,
    planStats: checkPlanStats(`${where}.planStats`, line.planStats, record),
  };
}

const PLAN_STATS_KEYS = ['planId', 'runningOutcome', 'replays', 'failures', 'updatedAt'];

function checkPlanStats(where: string, value: unknown, record: MemoryRecord): PlanStats {
  const s = checkKeys(where, value, PLAN_STATS_KEYS);
  const f = (name: string) => `${where}.${name}`;
  if (!isPlanRecord(record))
    throw invalidInput(where, `must be absent: record ${record.id} is not a plan`);
  if (s.planId !== record.id) throw invalidInput(f('planId'), "must be the record's id");
  const replays = checkCount(f('replays'), s.replays);
  const failures = checkCount(f('failures'), s.failures);
  if (failures > replays) throw invalidInput(f('failures'), 'must be at most replays');
  return {
    planId: record.id,
    runningOutcome: validateUnitInterval(f('runningOutcome'), s.runningOutcome),
    replays,
    failures,
    updatedAt: validateDate(f('updatedAt'), s.updatedAt),
  };
}

const time = (value: Date | null) => (value === null ? null : value.toISOString());

/**
 * The JSON form of an exported record: Dates as ISO strings, the embedding as
 * a number array, metadata keys sorted (as in the hash's canonical form), so
 * the same records export to the same bytes from any store (PostgreSQL's
 * `jsonb` returns keys in its own order).
 */
export function exportToJson({ record, grants, planStats }: ExportedRecord): JsonObject {
  const json: JsonObject = {
    format: EXPORT_FORMAT,
    record: {
      ...record,
      metadata: JSON.parse(canonicalJson(record.metadata)) as JsonObject,
      embedding: record.embedding === null ? null : Array.from(record.embedding),
      createdAt: record.createdAt.toISOString(),
      updatedAt: record.updatedAt.toISOString(),
      expiresAt: time(record.expiresAt),
      deletedAt: time(record.deletedAt),
      lastAccessedAt: time(record.lastAccessedAt),
    },
    grants: grants.map((grant) => ({
      ...grant,
      createdAt: grant.createdAt.toISOString(),
      expiresAt: time(grant.expiresAt),
    })),
  };
  if (planStats !== undefined)
    json.planStats = { ...planStats, updatedAt: planStats.updatedAt.toISOString() };
  return json;
}

const RECORD_KEYS = [
  'id',
  'agentId',
  'orgId',
  'content',
  'memoryType',
  'scope',
  'importance',
  'tags',
  'metadata',
  'embedding',
  'contentHash',
  'threadId',
  'sourceType',
  'createdAt',
  'updatedAt',
  'expiresAt',
  'deletedAt',
  'accessCount',
  'lastAccessedAt',
];

const LIMITS = {
  maxContentBytes: Number.MAX_SAFE_INTEGER,
  maxTags: 10_000,
  maxTagLength: 10_000,
  maxMetadataBytes: Number.MAX_SAFE_INTEGER,
  maxMetadataDepth: 64,
};

function checkEmbedding(field: string, value: unknown): Float32Array | null {
  if (value === null) return null;
  if (!(value instanceof Float32Array)) throw invalidInput(field, 'must be null or a Float32Array');
  const problem = embeddingProblem(value);
  if (problem !== null) throw invalidInput(field, `is an embedding that ${problem}`);
  return Float32Array.from(value);
}

function checkHash(field: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/.test(value)) {
    throw invalidInput(field, 'must be 64 hex digits');
  }
  return value;
}

function checkCount(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidInput(field, 'must be a non-negative integer');
  }
  return value;
}

const GRANT_KEYS = [
  'recordId',
  'granteeAgentId',
  'granteeOrgId',
  'permission',
  'grantedBy',
  'createdAt',
  'expiresAt',
];

/** Parses and validates the JSON form; `where` names the input in errors (e.g. `line 7`). */
export function exportFromJson(value: unknown, where: string): ExportedRecord {
  const line = checkKeys(where, value, ['format', 'record', 'grants', 'planStats']);
  if (line.format !== EXPORT_FORMAT)
    throw invalidInput(`${where}.format`, `must be "${EXPORT_FORMAT}"`);
  const r = checkKeys(`${where}.record`, line.record, RECORD_KEYS);
  // ISO strings to Dates, a number array to a Float32Array; checkExported validates the rest.
  const date = (field: string, raw: unknown, nullable: boolean): unknown => {
    if (raw === null && nullable) return null;
    if (typeof raw !== 'string') throw invalidInput(field, 'must be an ISO date string');
    return new Date(raw);
  };
  const f = (name: string) => `${where}.record.${name}`;
  const embedding = r.embedding;
  if (
    embedding !== null &&
    (!Array.isArray(embedding) ||
      !embedding.every((x) => typeof x === 'number' && Number.isFinite(x)))
  ) {
    throw invalidInput(f('embedding'), 'must be null or an array of finite numbers');
  }
  const record = {
    ...r,
    embedding: embedding === null ? null : Float32Array.from(embedding as number[]),
    createdAt: date(f('createdAt'), r.createdAt, false),
    updatedAt: date(f('updatedAt'), r.updatedAt, false),
    expiresAt: date(f('expiresAt'), r.expiresAt, true),
    deletedAt: date(f('deletedAt'), r.deletedAt, true),
    lastAccessedAt: date(f('lastAccessedAt'), r.lastAccessedAt, true),
  };
  const grants = validateArray(`${where}.grants`, line.grants, 100_000).map((raw, i) => {
    const g = checkKeys(`${where}.grants[${i}]`, raw, GRANT_KEYS);
    const gf = (name: string) => `${where}.grants[${i}].${name}`;
    return {
      ...g,
      createdAt: date(gf('createdAt'), g.createdAt, false),
      expiresAt: date(gf('expiresAt'), g.expiresAt, true),
    };
  });
  if (line.planStats === undefined) return checkExported({ record, grants }, where);
  const stats = checkKeys(`${where}.planStats`, line.planStats, PLAN_STATS_KEYS);
  const planStats = {
    ...stats,
    updatedAt: date(`${where}.planStats.updatedAt`, stats.updatedAt, false),
  };
  return checkExported({ record, grants, planStats }, where);
}
