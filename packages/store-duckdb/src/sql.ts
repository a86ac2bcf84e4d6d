import {
  BIGINT,
  BOOLEAN,
  DOUBLE,
  type DuckDBType,
  type DuckDBValue,
  FLOAT,
  INTEGER,
  LIST,
  listValue,
  VARCHAR,
} from '@duckdb/node-api';
import type { RecordFilters, Visibility } from '@mnemo/core';

/** Named parameters for one statement. Lists need their DuckDB type spelled out. */
export class Params {
  readonly values: Record<string, DuckDBValue> = {};
  readonly types: Record<string, DuckDBType> = {};
  private counter = 0;

  /** Binds a scalar (string, number, boolean or null) and returns its placeholder. */
  scalar(value: string | number | boolean | null): string {
    const name = this.next();
    this.values[name] = value;
    return `$${name}`;
  }

  /** Binds a timestamp as Unix milliseconds. */
  time(value: Date | null): string {
    return this.scalar(value === null ? null : value.getTime());
  }

  strings(values: readonly string[]): string {
    return this.list(values, VARCHAR);
  }

  integers(values: readonly number[]): string {
    return this.list(values, INTEGER);
  }

  floats(values: Float32Array | null): string {
    if (values === null) return this.scalar(null);
    return this.list(Array.from(values), FLOAT);
  }

  // Column lists, for multi-row statements: `SELECT unnest($a), unnest($b), …` zips them into rows.

  nullableStrings(values: readonly (string | null)[]): string {
    return this.list(values, VARCHAR);
  }

  doubles(values: readonly number[]): string {
    return this.list(values, DOUBLE);
  }

  bigints(values: readonly (number | null)[]): string {
    return this.list(values, BIGINT);
  }

  times(values: readonly (Date | null)[]): string {
    return this.list(
      values.map((value) => (value === null ? null : value.getTime())),
      BIGINT,
    );
  }

  booleans(values: readonly boolean[]): string {
    return this.list(values, BOOLEAN);
  }

  stringLists(values: readonly (readonly string[] | null)[]): string {
    const name = this.next();
    this.values[name] = listValue(
      values.map((items) => (items === null ? null : listValue([...items]))),
    );
    this.types[name] = LIST(LIST(VARCHAR));
    return `$${name}`;
  }

  floatLists(values: readonly (Float32Array | null)[]): string {
    const name = this.next();
    this.values[name] = listValue(
      values.map((items) => (items === null ? null : listValue(Array.from(items)))),
    );
    this.types[name] = LIST(LIST(FLOAT));
    return `$${name}`;
  }

  private list(
    values: readonly (string | number | boolean | null)[],
    itemType: DuckDBType,
  ): string {
    const name = this.next();
    this.values[name] = listValue([...values]);
    this.types[name] = LIST(itemType);
    return `$${name}`;
  }

  private next(): string {
    this.counter += 1;
    return `p${this.counter}`;
  }
}

const LIVE = (r: string, now: string) =>
  `${r}.deleted_at IS NULL AND (${r}.expires_at IS NULL OR ${r}.expires_at > ${now})`;

function liveGrant(r: string, p: Params, v: Visibility): string {
  return `g.record_id = ${r}.id AND g.grantee_agent_id = ${p.scalar(v.agentId)}
    AND g.grantee_org_id IS NOT DISTINCT FROM ${p.scalar(v.orgId)}
    AND (g.expires_at IS NULL OR g.expires_at > ${p.time(v.now)})`;
}

function owns(r: string, p: Params, v: Visibility): string {
  return `(${r}.agent_id = ${p.scalar(v.agentId)} AND ${r}.org_id IS NOT DISTINCT FROM ${p.scalar(v.orgId)})`;
}

/** The visibility rule of `Visibility` (see core) as a predicate on records aliased `r`. */
export function visiblePredicate(p: Params, v: Visibility, r = 'r'): string {
  return `(${LIVE(r, p.time(v.now))} AND (
    ${owns(r, p, v)}
    OR ${r}.scope = 'global'
    OR (${r}.scope = 'public' AND ${r}.org_id IS NOT DISTINCT FROM ${p.scalar(v.orgId)})
    OR (${r}.scope = 'shared' AND EXISTS (SELECT 1 FROM mnemo_grants g WHERE ${liveGrant(r, p, v)}))
  ))`;
}

/**
 * The visible, filtered, non-plan records (the visibility rule of
 * `visiblePredicate`) as a query selecting `columns` of `r`, for the scans
 * that read the whole collection (BM25 statistics, vector search). The
 * shared-with-me records are a separate branch: as an `EXISTS` inside the
 * `OR` of the rule, the grant lookup ran for every record (150 ms at 100k
 * records), while a branch first keeps only `shared` records, which are few.
 * The branches are disjoint (owned, global or public records; shared
 * records of others), so `UNION ALL` counts each record once.
 */
export function visibleRecords(
  p: Params,
  v: Visibility,
  f: RecordFilters,
  columns: string,
): string {
  const now = p.time(v.now);
  const base = `NOT r.is_plan AND r.deleted_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > ${now})
    AND ${filterPredicate(p, f)}`;
  return `SELECT ${columns} FROM mnemo_records r
    WHERE ${base} AND (${owns('r', p, v)} OR r.scope = 'global'
      OR (r.scope = 'public' AND r.org_id IS NOT DISTINCT FROM ${p.scalar(v.orgId)}))
    UNION ALL
    SELECT ${columns} FROM mnemo_records r
    WHERE r.scope = 'shared' AND ${base} AND NOT ${owns('r', p, v)}
      AND r.id IN (SELECT g.record_id FROM mnemo_grants g
        WHERE g.grantee_agent_id = ${p.scalar(v.agentId)}
          AND g.grantee_org_id IS NOT DISTINCT FROM ${p.scalar(v.orgId)}
          AND (g.expires_at IS NULL OR g.expires_at > ${now}))`;
}

/** The caller's permission level on a visible record (5 = owner/admin … 1 = read). */
export function permissionLevelExpression(p: Params, v: Visibility, r = 'r'): string {
  return `CASE WHEN ${owns(r, p, v)} THEN 5 ELSE greatest(
    CASE WHEN ${r}.scope IN ('public', 'global') THEN 1 ELSE 0 END,
    coalesce((SELECT max(g.level) FROM mnemo_grants g WHERE ${liveGrant(r, p, v)}), 0)
  ) END`;
}

/** True when `f` sets no filter. */
export function noFilters(f: RecordFilters): boolean {
  return Object.values(f).every((value) => value === undefined);
}

/** `RecordFilters` as a predicate on records aliased `r` ('TRUE' when empty). */
export function filterPredicate(p: Params, f: RecordFilters, r = 'r'): string {
  const parts: string[] = [];
  if (f.memoryTypes) parts.push(`list_contains(${p.strings(f.memoryTypes)}, ${r}.memory_type)`);
  if (f.scopes) parts.push(`list_contains(${p.strings(f.scopes)}, ${r}.scope)`);
  if (f.tagsAny) parts.push(`list_has_any(${r}.tags, ${p.strings(f.tagsAny)})`);
  if (f.tagsAll) parts.push(`list_has_all(${r}.tags, ${p.strings(f.tagsAll)})`);
  if (f.minImportance !== undefined) parts.push(`${r}.importance >= ${p.scalar(f.minImportance)}`);
  if (f.createdAfter) parts.push(`${r}.created_at >= ${p.time(f.createdAfter)}`);
  if (f.createdBefore) parts.push(`${r}.created_at < ${p.time(f.createdBefore)}`);
  if (f.threadId !== undefined) parts.push(`${r}.thread_id = ${p.scalar(f.threadId)}`);
  return parts.length === 0 ? 'TRUE' : parts.join(' AND ');
}

/** Columns of a record row, as `rowToRecord` reads them. */
export const RECORD_COLUMNS = [
  'id',
  'agent_id',
  'org_id',
  'content',
  'memory_type',
  'scope',
  'importance',
  'tags',
  'metadata',
  'embedding',
  'content_hash',
  'thread_id',
  'source_type',
  'created_at',
  'updated_at',
  'expires_at',
  'deleted_at',
  'access_count',
  'last_accessed_at',
]
  .map((column) => `r.${column}`)
  .join(', ');
