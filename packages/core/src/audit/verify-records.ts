import { compareByteOrder } from '../byte-order.js';
import { contentHash } from '../hashing.js';
import type { Grant, MemoryStore, PlanStats } from '../ports/memory-store.js';
import { type ExportedRecord, readRecordPage } from '../record-page.js';
import { isPlanRecord, type MemoryRecord, REDACTED_CONTENT } from '../records.js';
import { validatePageSize } from '../validation.js';
import type { AuditEvent } from './audit-event.js';

export type RecordProblemKind =
  /** The record's fields no longer hash to its `contentHash`: content, metadata, tags, scope… changed. */
  | 'hash_mismatch'
  /** The record's `contentHash` is not the one its `remember`/`import` event recorded. */
  | 'audit_mismatch'
  /** No `remember` or `import` event names the record: it was inserted behind the engine's back. */
  | 'unaudited'
  /** A `remember`/`import` event names the record, no later hard `forget` does, and it is gone. */
  | 'missing'
  /**
   * The last `forget` event naming the record deleted it, yet it is live
   * again; or it forgot it for good (`hard`), yet the record is back.
   */
  | 'undeleted'
  /** The last `forget` event naming the record redacted it, yet its content is back. */
  | 'unredacted'
  /** The record is marked deleted, but no `forget` event names it (nor was it imported deleted). */
  | 'unaudited_deletion'
  /**
   * A grant on the record that no `share` or `import` event made as it is:
   * added, or its permission, expiry, granter or time changed.
   */
  | 'unaudited_grant'
  /** A `share` or `import` event gave an agent a grant on the record, and it is gone. */
  | 'missing_grant'
  /**
   * A plan's stats (running outcome, replays, failures, time) are not the ones
   * its latest `plan_outcome` or `import` event recorded: changed, added or
   * deleted, which could bring a retired plan back into replay.
   */
  | 'unaudited_plan_stats';

export interface RecordProblem {
  kind: RecordProblemKind;
  recordId: string;
  /**
   * Where the record stands (or, for `missing`, would stand) in the store's id
   * order, from 1: problems are reported in this order, so the first one is the
   * first bad position.
   */
  position: number;
  message: string;
}

export interface RecordVerification {
  ok: boolean;
  /** Records read. */
  records: number;
  /** Every problem found, at most one per record, in position order. */
  problems: RecordProblem[];
}

export interface VerifyRecordsOptions {
  /** Records and events per store read (default 1000). */
  pageSize?: number;
}

/** Plan stats an event recorded: their value, how many replays they count, and the event. */
interface MadeStats {
  value: string;
  replays: number;
  made: EventAt;
}

/** What the audit log says a record should be now. */
type RecordState = 'live' | 'soft' | 'redact' | 'hard';

/** Where an event stands, to tell which of two events came later. */
interface Position {
  chain: string;
  at: number;
  rank: number;
}

/**
 * A grant an event made: its value, the time of the event and, for a `share`,
 * the chain of the event (a later share of that chain to the same grantee
 * replaced it).
 */
interface MadeGrant {
  value: string;
  /** The event that made it. */
  made: EventAt;
  /** Whether a `share` made it (else an `import`). */
  shared: boolean;
}

/** An event's chain, seq and time: within a chain seq orders events, across chains time. */
interface EventAt {
  chain: string;
  seq: number;
  at: number;
}

/** Whether `event` came after `hard` (a hard forget, if any). */
function cameAfter(event: EventAt, hard: EventAt | null): boolean {
  if (hard === null) return true;
  return event.chain === hard.chain ? event.seq > hard.seq : event.at > hard.at;
}

interface AuditedRecord {
  /**
   * Every grant a `share` or `import` event made on the record, by grantee,
   * each as `grantValue` with the time of its event (absent until there is
   * one); null once an `import` event that did not record its grants (made
   * before they were) names the record: its grants are then not checked.
   */
  grants?: Map<string, MadeGrant[]> | null;
  /**
   * The plan stats `plan_outcome` and `import` events recorded, at most one per
   * chain (a chain's later event supersedes its earlier one); null once an
   * `import` or `plan_outcome` event of a plan that did not record its stats
   * (made before they were) names the record: its stats are then not checked.
   */
  stats?: MadeStats[] | null;
  /** The last hard `forget` naming the record: grants made before it went with it. */
  hard: EventAt | null;
  /**
   * Every `import` event naming the record (absent until there is one): after
   * a hard forget, the one that restored it.
   */
  imports?: readonly EventAt[];
  /** The last `forget` of any mode naming it: a forgotten plan's stats go with it. */
  forgotten: EventAt | null;
  /** The content hash the last `remember` or `import` event recorded, when there is one. */
  createdHash: string | null;
  created: Position | null;
  /**
   * The state the last event naming it left it in: `live` once written, a
   * `forget`'s mode, or, for a record imported deleted or redacted, `soft` or
   * `redact` (imports carry their deletion state).
   */
  state: RecordState | null;
  changed: Position | null;
  /**
   * For a record the last event left redacted: the hash of the record as
   * redacted, which that event recorded; null when it recorded none (made
   * before events did): the fields the redaction left are then not checked.
   */
  redactedHash?: string | null;
}

/**
 * Checks every record against its own hash and against the audit log: each
 * record hashes to its `contentHash` (redacted ones excepted), that hash is
 * the one recorded when it was written, every record was written through the
 * engine, none vanished without a hard `forget`, and deletion states agree
 * with the `forget` events; every grant is one a `share` or `import` made,
 * and every plan's stats those its latest `plan_outcome` or `import` recorded.
 * Trusts the audit log's events: run `verifyAudit` too, which proves the log
 * itself. Reads the whole log once and the records (with their grants and
 * stats) once, page by page, keeping one small entry per audited record in
 * memory; when it finds a problem, it reads the log again and drops the
 * problem when the record as read matches a state the log gave it since, so
 * that calls writing or forgetting while it runs raise none.
 */
export async function verifyRecords(
  store: MemoryStore,
  options: VerifyRecordsOptions = {},
): Promise<RecordVerification> {
  const pageSize = validatePageSize(options.pageSize, 1000);

  const first = await readAuditedRecords(store, pageSize);
  const audited = first.records;
  let problems: RecordProblem[] = [];
  // The records behind the problems, as read, to check again against a later read of the log.
  const suspects = new Map<string, ExportedRecord>();
  const seen = new Set<string>();
  let records = 0;
  let afterId: string | undefined;
  for (;;) {
    const page = await readRecordPage(store, afterId, pageSize);
    for (const scanned of page) {
      const { record } = scanned;
      records += 1;
      seen.add(record.id);
      const problem = checkRecord(scanned, audited.get(record.id));
      if (problem !== null) {
        problems.push({ ...problem, recordId: record.id, position: records });
        suspects.set(record.id, scanned);
      }
    }
    const last = page.at(-1);
    if (page.length < pageSize || last === undefined) break;
    afterId = last.record.id;
  }

  let missing = [...audited]
    .filter(([id, entry]) => !seen.has(id) && entry.createdHash !== null)
    .filter(([, entry]) => entry.state !== 'hard')
    .map(([id]) => id)
    .sort(compareByteOrder);
  if (problems.length > 0 || missing.length > 0) {
    // Calls running meanwhile change records after the log was read, with events the first
    // read did not see: a record written, forgotten or hard-forgotten since. What a record
    // was when scanned is what one of the two reads says, so a problem stands only if it
    // stands against both. On a store no one writes to, the two reads are the same.
    // A record scanned between two events of the second read is what the log said in
    // between: so each state the record went through after the first read is tried, not only
    // the last (a record written, then shared or forgotten after it was scanned, is fine).
    const cleared = await clearedMeanwhile(store, pageSize, first, suspects, new Set(missing));
    problems = problems.filter((problem) => !cleared.has(problem.recordId));
    missing = missing.filter((id) => !cleared.has(id));
  }
  if (missing.length > 0) {
    // Positions count the missing records among the scanned ones, in id order: a missing
    // record stands after every scanned or missing record whose id sorts before it, and a
    // scanned record moves back by the missing ones before it.
    let missingBefore = 0;
    for (const problem of problems) {
      while (
        missingBefore < missing.length &&
        compareByteOrder(missing[missingBefore] as string, problem.recordId) < 0
      )
        missingBefore += 1;
      problem.position += missingBefore;
    }
    const scanned = [...seen].sort(compareByteOrder);
    let index = 0;
    for (const [offset, id] of missing.entries()) {
      while (index < scanned.length && compareByteOrder(scanned[index] as string, id) < 0)
        index += 1;
      problems.push({
        kind: 'missing',
        recordId: id,
        position: index + offset + 1,
        message: `record ${id} was written but is gone, and no hard forget since names it`,
      });
    }
    problems.sort((a, b) => a.position - b.position);
  }
  return { ok: problems.length === 0, records, problems };
}

/**
 * Events that set a record's state, ranked for events of two chains at the
 * same instant: a record is written before it is forgotten.
 */
const RANK = { remember: 0, import: 1, forget: 2 } as const;

/** The log as read once: what it says of each record, and the last seq read of each chain. */
interface AuditRead {
  records: Map<string, AuditedRecord>;
  seqs: Map<string, number>;
}

/** Every event of the log, chain by chain, page by page. */
async function* readEvents(store: MemoryStore, pageSize: number): AsyncGenerator<AuditEvent> {
  let after: { chain: string; seq: number } | undefined;
  for (;;) {
    const page = await store.readAudit(
      after === undefined ? { limit: pageSize } : { after, limit: pageSize },
    );
    yield* page;
    const last = page.at(-1);
    if (page.length < pageSize || last === undefined) return;
    after = { chain: last.chain, seq: last.seq };
  }
}

/**
 * Reads the log once, chain by chain, keeping per record the state its
 * latest event left it in (see `applyEvent`).
 */
async function readAuditedRecords(store: MemoryStore, pageSize: number): Promise<AuditRead> {
  const read: AuditRead = { records: new Map(), seqs: new Map() };
  for await (const event of readEvents(store, pageSize)) {
    applyEvent(read.records, event);
    read.seqs.set(event.chain, event.seq);
  }
  return read;
}

/**
 * Reads the log again and returns the ids, among `suspects` and `missing`,
 * that some state the log gave them since `first` accounts for: the events
 * appended since `first` that name them are applied one at a time, oldest
 * first (each chain in seq order), onto what `first` said (its entries
 * change), and the record as scanned is checked after each.
 */
async function clearedMeanwhile(
  store: MemoryStore,
  pageSize: number,
  first: AuditRead,
  suspects: ReadonlyMap<string, ExportedRecord>,
  missing: ReadonlySet<string>,
): Promise<Set<string>> {
  const named = (event: AuditEvent) =>
    event.recordIds.some((id) => suspects.has(id) || missing.has(id));
  // The new events naming them, per chain, in seq order.
  const byChain = new Map<string, AuditEvent[]>();
  for await (const event of readEvents(store, pageSize)) {
    if (event.seq <= (first.seqs.get(event.chain) ?? 0) || !named(event)) continue;
    const events = byChain.get(event.chain);
    if (events === undefined) byChain.set(event.chain, [event]);
    else events.push(event);
  }
  // Nothing reads the first read's entries after this, so the events are applied onto them.
  const states = first.records;
  const cleared = new Set<string>();
  const queues = [...byChain.values()];
  for (;;) {
    let next: AuditEvent[] | undefined;
    for (const queue of queues) {
      const head = queue[0];
      if (
        head !== undefined &&
        (next === undefined || head.at.getTime() < (next[0] as AuditEvent).at.getTime())
      )
        next = queue;
    }
    const event = next?.shift();
    if (event === undefined) return cleared;
    applyEvent(states, event);
    for (const id of event.recordIds) {
      const suspect = suspects.get(id);
      if (suspect !== undefined && checkRecord(suspect, states.get(id)) === null) cleared.add(id);
      if (missing.has(id) && states.get(id)?.state === 'hard') cleared.add(id);
    }
  }
}

/** Whether `position` comes after `last`. */
function isLater(last: Position | null, position: Position): boolean {
  if (last === null || last.chain === position.chain) return true;
  return position.at !== last.at ? position.at > last.at : position.rank >= last.rank;
}

/**
 * Applies one event to `audited`, which keeps per record the state its latest
 * event left it in. Within a chain, seq orders the events. Across chains, a
 * `remember` comes first: it created the record (its id is new), so every
 * other event naming the record followed it, whatever the clocks of the
 * processes that wrote them said. The others are ordered by their time (then
 * `RANK`).
 */
function applyEvent(audited: Map<string, AuditedRecord>, event: AuditEvent): void {
  const entry = (id: string): AuditedRecord => {
    let found = audited.get(id);
    if (found === undefined) {
      found = {
        hard: null,
        forgotten: null,
        createdHash: null,
        created: null,
        state: null,
        changed: null,
      };
      audited.set(id, found);
    }
    return found;
  };
  const eventAt = { chain: event.chain, seq: event.seq, at: event.at.getTime() };
  if (event.op === 'share') {
    const { grantees, permission, expiresAt } = event.details;
    const [id] = event.recordIds;
    if (id === undefined || !Array.isArray(grantees)) return;
    const at = event.at.getTime();
    for (const grantee of grantees) {
      if (typeof grantee !== 'string') continue;
      // The grantee's org is the record's (`SAME_ORG`): a record never changes org.
      const value = grantValue(SAME_ORG, permission, event.chain, at, expiresAt);
      addGrant(entry(id), grantee, { value, made: eventAt, shared: true });
    }
    return;
  }
  if (event.op === 'plan_outcome') {
    const [id] = event.recordIds;
    const { runningOutcome, replays, failures } = event.details;
    if (id === undefined) return;
    // One made before these events recorded the stats leaves them unchecked.
    if (typeof replays !== 'number') {
      entry(id).stats = null;
      return;
    }
    addStats(entry(id), {
      value: statsValue(runningOutcome, replays, failures, eventAt.at),
      replays,
      made: eventAt,
    });
    return;
  }
  if (event.op !== 'remember' && event.op !== 'import' && event.op !== 'forget') return;
  const at = event.op === 'remember' ? Number.NEGATIVE_INFINITY : event.at.getTime();
  const position = { chain: event.chain, at, rank: RANK[event.op] };
  if (event.op === 'forget') {
    const { mode, redactedHashes } = event.details;
    const state = mode === 'hard' || mode === 'redact' ? mode : 'soft';
    for (const [index, id] of event.recordIds.entries()) {
      const forgotten = entry(id);
      if (state === 'hard' && cameAfter(eventAt, forgotten.hard)) forgotten.hard = eventAt;
      if (cameAfter(eventAt, forgotten.forgotten)) forgotten.forgotten = eventAt;
      if (isLater(forgotten.changed, position)) {
        forgotten.state = state;
        forgotten.changed = position;
        const redactedHash = Array.isArray(redactedHashes) ? redactedHashes[index] : null;
        forgotten.redactedHash = typeof redactedHash === 'string' ? redactedHash : null;
      }
    }
    return;
  }
  const [id] = event.recordIds;
  const hash = event.details.contentHash;
  if (id === undefined || typeof hash !== 'string') return;
  const created = entry(id);
  if (event.op === 'import') {
    created.imports = [...(created.imports ?? []), eventAt];
    const { planStats } = event.details;
    // An import records a plan's stats (null for none); one without the key (of a record that
    // is no plan, or made before imports recorded them) leaves them unchecked.
    if (planStats === undefined) created.stats = null;
    else if (typeof planStats === 'object' && planStats !== null && !Array.isArray(planStats)) {
      const { runningOutcome, replays, failures, updatedAt } = planStats;
      if (typeof replays === 'number' && typeof updatedAt === 'string') {
        const value = statsValue(runningOutcome, replays, failures, Date.parse(updatedAt));
        addStats(created, { value, replays, made: eventAt });
      }
    }
    const grants = event.details.grants;
    if (!Array.isArray(grants)) created.grants = null;
    for (const grant of Array.isArray(grants) ? grants : []) {
      if (typeof grant !== 'object' || grant === null || Array.isArray(grant)) continue;
      const { grantee, granteeOrgId, permission, grantedBy, createdAt, expiresAt } = grant;
      if (typeof grantee !== 'string' || typeof createdAt !== 'string') continue;
      const value = grantValue(
        granteeOrgId ?? null,
        permission,
        grantedBy,
        Date.parse(createdAt),
        expiresAt,
      );
      addGrant(created, grantee, { value, made: eventAt, shared: false });
    }
  }
  if (isLater(created.created, position)) {
    created.createdHash = hash;
    created.created = position;
  }
  if (isLater(created.changed, position)) {
    const { redacted, deleted, redactedHash } = event.details;
    created.state = redacted === true ? 'redact' : deleted === true ? 'soft' : 'live';
    created.changed = position;
    created.redactedHash = typeof redactedHash === 'string' ? redactedHash : null;
  }
}

/** What plan stats are, as an event recorded them or as the store holds them, in one string. */
function statsValue(
  runningOutcome: unknown,
  replays: unknown,
  failures: unknown,
  updatedAt: number,
): string {
  return JSON.stringify([runningOutcome, replays, failures, updatedAt]);
}

/** Adds stats an event recorded; they supersede those of an earlier event of the same chain. */
function addStats(audit: AuditedRecord, stats: MadeStats): void {
  if (audit.stats === null) return;
  audit.stats = [
    ...(audit.stats ?? []).filter((earlier) => earlier.made.chain !== stats.made.chain),
    stats,
  ];
}

/**
 * A plan's stats against the events that recorded them: those of the event
 * counting the most replays since the plan was last forgotten (a forget of any
 * mode removes them; replays only grow, one per report, and reports of one
 * plan are serialized), or none. Events of two chains counting as many are
 * both accepted.
 * Only the forgetting agent's own events are ordered against the forget (by
 * seq): another agent's report may have held the plan while the forget, its
 * clock already read, waited, and their processes' clocks may disagree. So
 * stats of another chain's event pass too (unless an event known to come
 * after the forget counts more replays), and none pass unless an event of
 * the forget's chain came after it.
 */
function checkPlanStats(
  record: MemoryRecord,
  audit: AuditedRecord,
  planStats: PlanStats | undefined,
): Omit<RecordProblem, 'recordId' | 'position'> | null {
  if (audit.stats === null || !isPlanRecord(record)) return null;
  const { forgotten } = audit;
  const possible = (audit.stats ?? []).filter(
    (stats) =>
      forgotten === null || stats.made.chain !== forgotten.chain || stats.made.seq > forgotten.seq,
  );
  const after = possible.filter(
    (stats) => forgotten === null || stats.made.chain === forgotten.chain,
  );
  const most = Math.max(...after.map((stats) => stats.replays));
  const ok =
    planStats === undefined
      ? after.length === 0
      : planStats.replays >= most &&
        possible.some(
          (stats) =>
            stats.value ===
            statsValue(
              planStats.runningOutcome,
              planStats.replays,
              planStats.failures,
              planStats.updatedAt.getTime(),
            ),
        );
  if (ok) return null;
  return {
    kind: 'unaudited_plan_stats',
    message: `plan ${record.id}'s stats are not the ones its latest plan_outcome or import event recorded`,
  };
}

/** Stands for the record's own org in a grant made by `share`. */
const SAME_ORG = '\u0000record org';

/** What a grant is, as an event made it or as the store holds it, in one comparable string. */
function grantValue(
  granteeOrgId: unknown,
  permission: unknown,
  grantedBy: unknown,
  createdAt: number,
  expiresAt: unknown,
): string {
  const expiry = typeof expiresAt === 'string' ? Date.parse(expiresAt) : null;
  return JSON.stringify([granteeOrgId, permission, grantedBy, createdAt, expiry]);
}

/**
 * Adds a grant an event made. A share replaces the grant the same chain's
 * last share gave the grantee: events of one chain come in seq order, and the
 * store keeps one grant per grantee, so that one can no longer be held.
 */
function addGrant(audit: AuditedRecord, grantee: string, grant: MadeGrant): void {
  if (audit.grants === null) return;
  audit.grants ??= new Map();
  const made = (audit.grants.get(grantee) ?? []).filter(
    (earlier) => !grant.shared || !earlier.shared || earlier.made.chain !== grant.made.chain,
  );
  made.push(grant);
  audit.grants.set(grantee, made);
}

/**
 * The grants on a record against the events that made them: each must be
 * one a `share` or `import` event made, as it is, and each grantee an event
 * gave a grant (since the record's last hard forget) must still hold one.
 * Shares of two agents are not ordered here (their processes' clocks may
 * disagree), so a grant an earlier share of another agent made passes too;
 * one an agent's own later share replaced does not.
 * A hard forget reads its clock before it waits for the record, so another
 * agent's share, later by the clock, may have committed first and had its
 * grant removed. A record hard-forgotten and here again was restored by an
 * import: such a share must still be held only if it came after that import
 * (there was no record to share in between).
 */
function checkGrants(
  record: MemoryRecord,
  audit: AuditedRecord,
  grants: readonly Grant[],
): Omit<RecordProblem, 'recordId' | 'position'> | null {
  if (audit.grants === null) return null;
  const { hard } = audit;
  const made = (grantee: string) =>
    (audit.grants?.get(grantee) ?? []).filter((grant) => cameAfter(grant.made, hard));
  // At most one import names the record after its hard forget: an import skips a record that exists.
  const restored =
    hard === null ? undefined : audit.imports?.find((event) => cameAfter(event, hard));
  const held = (grant: MadeGrant) =>
    !grant.shared ||
    restored === undefined ||
    grant.made.chain === hard?.chain ||
    cameAfter(grant.made, restored);
  const holders = new Set<string>();
  for (const grant of grants) {
    holders.add(grant.granteeAgentId);
    const values = made(grant.granteeAgentId).map((event) => event.value);
    const as = (org: unknown) =>
      grantValue(
        org,
        grant.permission,
        grant.grantedBy,
        grant.createdAt.getTime(),
        grant.expiresAt?.toISOString() ?? null,
      );
    const found =
      values.includes(as(grant.granteeOrgId)) ||
      (grant.granteeOrgId === record.orgId && values.includes(as(SAME_ORG)));
    if (!found) {
      return {
        kind: 'unaudited_grant',
        message: `record ${record.id}'s grant to ${grant.granteeAgentId} is not one a share or import made`,
      };
    }
  }
  for (const grantee of audit.grants?.keys() ?? []) {
    if (!holders.has(grantee) && made(grantee).some(held)) {
      return {
        kind: 'missing_grant',
        message: `record ${record.id}'s grant to ${grantee} was made by a share or import, and is gone`,
      };
    }
  }
  return null;
}

function checkRecord(
  { record, grants, planStats }: ExportedRecord,
  audit: AuditedRecord | undefined,
): Omit<RecordProblem, 'recordId' | 'position'> | null {
  const id = record.id;
  if (audit === undefined || audit.createdHash === null) {
    return { kind: 'unaudited', message: `record ${id} was not written through the engine` };
  }
  const redacted =
    audit.state === 'redact' && record.content === REDACTED_CONTENT && record.deletedAt !== null;
  if (!redacted && contentHash(record) !== record.contentHash) {
    return { kind: 'hash_mismatch', message: `record ${id} does not match its content hash` };
  }
  if (
    redacted &&
    typeof audit.redactedHash === 'string' &&
    contentHash(record) !== audit.redactedHash
  ) {
    return {
      kind: 'hash_mismatch',
      message: `record ${id} does not match the hash its redaction recorded`,
    };
  }
  if (record.contentHash !== audit.createdHash) {
    return {
      kind: 'audit_mismatch',
      message: `record ${id}'s content hash is not the one recorded when it was written`,
    };
  }
  if (audit.state === 'hard') {
    return { kind: 'undeleted', message: `record ${id} was forgotten for good but is back` };
  }
  if (record.deletedAt === null && audit.state !== 'live') {
    return { kind: 'undeleted', message: `record ${id} was forgotten but is live again` };
  }
  if (record.deletedAt !== null && audit.state === 'live') {
    return {
      kind: 'unaudited_deletion',
      message: `record ${id} is marked deleted, but no forget names it`,
    };
  }
  if (audit.state === 'redact' && !redacted) {
    return { kind: 'unredacted', message: `record ${id} was redacted but its content is back` };
  }
  return checkGrants(record, audit, grants) ?? checkPlanStats(record, audit, planStats);
}
