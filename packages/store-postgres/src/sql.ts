import type { RecordFilters, Visibility } from '@mnemo/core';

/** Positional parameters ($1, $2, …) for one statement. */
export class Params {
  readonly values: unknown[] = [];

  /** Binds a value (arrays become PostgreSQL arrays) and returns its placeholder, with `cast` if given. */
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }

  /** Binds a timestamp as Unix milliseconds. */
  time(value: Date | null): string {
    return this.add(value === null ? null : value.getTime(), '::bigint');
  }

  texts(values: readonly (string | null)[]): string {
    return this.add(values, '::text[]');
  }
}

/**
 * `column IS NOT DISTINCT FROM orgId`, in a form the planner can estimate: `IS NULL` for no
 * org, else an equality that is false (never NULL) on a NULL column, so it negates safely.
 * PostgreSQL gives `IS NOT DISTINCT FROM` a default selectivity of 0.5 %, so a scan of all of
 * a tenant's records was planned as one row (and its top-k was not split among workers).
 */
export function sameOrg(p: Params, column: string, orgId: string | null): string {
  return orgId === null
    ? `${column} IS NULL`
    : `(${column} IS NOT NULL AND ${column} = ${p.add(orgId, '::text')})`;
}

const owns = (p: Params, v: Visibility, r: string) =>
  `(${r}.agent_id = ${p.add(v.agentId, '::text')} AND ${sameOrg(p, `${r}.org_id`, v.orgId)})`;

function liveGrant(p: Params, v: Visibility, r: string): string {
  return `g.record_id = ${r}.id AND g.grantee_agent_id = ${p.add(v.agentId, '::text')}
    AND ${sameOrg(p, 'g.grantee_org_id', v.orgId)}
    AND (g.expires_at IS NULL OR g.expires_at > ${p.time(v.now)})`;
}

/** The visibility rule of core's `Visibility` as a predicate on records aliased `r`; `s` is the schema. */
export function visiblePredicate(s: string, p: Params, v: Visibility, r = 'r'): string {
  const now = p.time(v.now);
  return `(${r}.deleted_at IS NULL AND (${r}.expires_at IS NULL OR ${r}.expires_at > ${now}) AND (
    ${owns(p, v, r)}
    OR ${r}.scope = 'global'
    OR (${r}.scope = 'public' AND ${sameOrg(p, `${r}.org_id`, v.orgId)})
    OR (${r}.scope = 'shared' AND EXISTS (SELECT 1 FROM ${s}.mnemo_grants g WHERE ${liveGrant(p, v, r)}))
  ))`;
}

/**
 * The visible, filtered, non-plan records as a query selecting `columns` of
 * `r`; `s` is the schema. Same rule as `visiblePredicate`, split into two
 * disjoint branches (owned, global or public records; others' shared
 * records with a live grant), so that neither carries a per-record grant
 * lookup and the first can be served by an index-only scan of
 * `mnemo_records_lexical`. `eachBranch` (an ORDER BY and LIMIT) ends each
 * branch, so that a top-k is taken inside each, the big one by its workers.
 */
export function visibleRecords(
  s: string,
  p: Params,
  v: Visibility,
  f: RecordFilters,
  columns: string,
  eachBranch = '',
): string {
  const now = p.time(v.now);
  const base = `NOT r.is_plan AND r.deleted_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > ${now})
    AND ${filterPredicate(p, f)}`;
  return `(SELECT ${columns} FROM ${s}.mnemo_records r
    WHERE ${base} AND (${owns(p, v, 'r')} OR r.scope = 'global'
      OR (r.scope = 'public' AND ${sameOrg(p, 'r.org_id', v.orgId)}))
    ${eachBranch})
    UNION ALL
    (SELECT ${columns} FROM ${s}.mnemo_records r
    WHERE r.scope = 'shared' AND ${base} AND NOT ${owns(p, v, 'r')}
      AND r.id IN (SELECT g.record_id FROM ${s}.mnemo_grants g
        WHERE g.grantee_agent_id = ${p.add(v.agentId, '::text')}
          AND ${sameOrg(p, 'g.grantee_org_id', v.orgId)}
          AND (g.expires_at IS NULL OR g.expires_at > ${now}))
    ${eachBranch})`;
}

/** The caller's permission level on a visible record (5 = owner/admin … 1 = read). */
export function permissionLevelExpression(s: string, p: Params, v: Visibility, r = 'r'): string {
  return `CASE WHEN ${owns(p, v, r)} THEN 5 ELSE greatest(
    CASE WHEN ${r}.scope IN ('public', 'global') THEN 1 ELSE 0 END,
    coalesce((SELECT max(g.level) FROM ${s}.mnemo_grants g WHERE ${liveGrant(p, v, r)}), 0)
  ) END`;
}

/** `RecordFilters` as a predicate on records aliased `r` ('TRUE' when empty). */
export function filterPredicate(p: Params, f: RecordFilters, r = 'r'): string {
  const parts: string[] = [];
  if (f.memoryTypes) parts.push(`${r}.memory_type = ANY(${p.texts(f.memoryTypes)})`);
  if (f.scopes) parts.push(`${r}.scope = ANY(${p.texts(f.scopes)})`);
  if (f.tagsAny) parts.push(`${r}.tags && ${p.texts(f.tagsAny)}`);
  if (f.tagsAll) parts.push(`${r}.tags @> ${p.texts(f.tagsAll)}`);
  if (f.minImportance !== undefined)
    parts.push(`${r}.importance >= ${p.add(f.minImportance, '::float8')}`);
  if (f.createdAfter) parts.push(`${r}.created_at >= ${p.time(f.createdAfter)}`);
  if (f.createdBefore) parts.push(`${r}.created_at < ${p.time(f.createdBefore)}`);
  if (f.threadId !== undefined) parts.push(`${r}.thread_id = ${p.add(f.threadId, '::text')}`);
  return parts.length === 0 ? 'TRUE' : parts.join(' AND ');
}

/**
 * Columns of the record row `r`, as `rowToRecord` reads them; `s` is the
 * schema. The embedding as a `real[]` whatever its type, in binary
 * (`array_send`): exact float4s with no decimal text to parse (the text of a
 * 384-d embedding took about 50 µs). The access count and time with the
 * accesses logged since the last fold (see access-log.ts): one more per row
 * of the log, and the time of the last one logged (by the log's order, not
 * by time: a clock may go back).
 */
export function recordColumns(s: string): string {
  const logged = `FROM ${s}.mnemo_accesses a WHERE a.record_id = r.id`;
  return [
    'id',
    'agent_id',
    'org_id',
    'content',
    'memory_type',
    'scope',
    'importance',
    'tags',
    'metadata',
    'content_hash',
    'thread_id',
    'source_type',
    'created_at',
    'updated_at',
    'expires_at',
    'deleted_at',
  ]
    .map((column) => `r.${column}`)
    .concat(
      `r.access_count + (SELECT count(*) ${logged}) AS access_count`,
      `coalesce((SELECT a.accessed_at ${logged} ORDER BY a.seq DESC LIMIT 1), r.last_accessed_at) AS last_accessed_at`,
      'array_send(r.embedding::real[]) AS embedding',
    )
    .join(', ');
}
