import { parseArgs } from 'node:util';
import {
  type Engine,
  type ExportedRecord,
  isPlanRecord,
  PLAN_METADATA_KEY,
  principalKey,
} from '@mnemo/core';
import { DEFAULT_SUCCESS_THRESHOLD } from '@mnemo/experience';
import { isoOrNull } from '../../render.js';
import { COMMON_OPTIONS, noPositionals, storeOf, usageErrors } from '../args.js';
import { type CliIo, json, oneLine, shortDate, table, write } from '../output.js';
import { withEngine } from '../store-spec.js';

export const PLANS_OPTIONS = {
  all: { type: 'boolean' },
} as const;

/** A cached plan as `mnemo plans --json` lists it. */
export interface PlanListing {
  id: string;
  /** Principal key of the owner (`agent` or `org/agent`). */
  owner: string;
  scope: string;
  query: string;
  /** The outcome score the plan was cached with; null when its payload is unreadable. */
  outcome_score: number | null;
  /** The running outcome of the outcomes reported (`reportPlanOutcome`), seeded with `outcome_score`. */
  running_outcome: number | null;
  /** Outcomes reported so far, and of those, the ones below 0.5. */
  outcomes_reported: number;
  failures: number;
  /** The running outcome fell below 0.5: the plan is no longer replayed. */
  retired: boolean;
  steps: number;
  chunk_ids: number;
  /** Replays so far: `recall_plan` audit events that returned this plan. */
  replays: number;
  created_at: string;
  deleted_at: string | null;
  /** When the plan expires or expired (then it is never replayed: forgotten, as a deletion is). */
  expires_at: string | null;
}

/**
 * `mnemo plans`: every cached plan of the store (an operator's view: all owners), with its
 * outcome score, its running outcome (retired below 0.5) and how many times it was
 * replayed. Forgotten plans (deleted, or expired: a TTL's expiry is a forget) only with
 * `--all`.
 */
export async function plans(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('plans', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...PLANS_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  noPositionals('plans', positionals);
  const spec = storeOf(values);
  const now = new Date();
  const listing = await withEngine(spec, { existing: true }, (engine) =>
    listPlans(engine, values.all === true, now),
  );
  if (values.json === true) {
    await write(io.stdout, json({ plans: listing }));
    return 0;
  }
  if (listing.length === 0) {
    await write(io.stdout, 'no cached plans\n');
    return 0;
  }
  await write(
    io.stdout,
    table(
      ['id', 'owner', 'scope', 'outcome', 'replays', 'created', 'query'],
      listing.map((plan) => [
        plan.deleted_at !== null
          ? `${plan.id} (forgotten)`
          : isExpired(plan.expires_at, now)
            ? `${plan.id} (expired)`
            : plan.retired
              ? `${plan.id} (retired)`
              : plan.id,
        plan.owner,
        plan.scope,
        plan.running_outcome === null ? '-' : plan.running_outcome.toFixed(2),
        String(plan.replays),
        shortDate(plan.created_at),
        oneLine(plan.query, 60),
      ]),
      [3, 4],
    ),
  );
  return 0;
}

const isExpired = (expiresAt: string | null, now: Date) =>
  expiresAt !== null && Date.parse(expiresAt) <= now.getTime();

async function listPlans(
  engine: Engine,
  includeForgotten: boolean,
  now: Date,
): Promise<PlanListing[]> {
  const listed: ExportedRecord[] = [];
  for await (const exported of engine.exportRecords()) {
    const { record } = exported;
    const forgotten = record.deletedAt !== null || isExpired(isoOrNull(record.expiresAt), now);
    if (isPlanRecord(record) && (includeForgotten || !forgotten)) listed.push(exported);
  }
  const replays = await countReplays(engine, new Set(listed.map(({ record }) => record.id)));
  return listed.map(({ record, planStats }) => {
    const payload = record.metadata[PLAN_METADATA_KEY];
    const fields =
      typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload : {};
    const outcomeScore = typeof fields.outcome_score === 'number' ? fields.outcome_score : null;
    const running = planStats?.runningOutcome ?? outcomeScore;
    return {
      id: record.id,
      owner: principalKey(record),
      scope: record.scope,
      query: record.content,
      outcome_score: outcomeScore,
      running_outcome: running,
      outcomes_reported: planStats?.replays ?? 0,
      failures: planStats?.failures ?? 0,
      retired: running !== null && running < DEFAULT_SUCCESS_THRESHOLD,
      steps: Array.isArray(fields.steps) ? fields.steps.length : 0,
      chunk_ids: Array.isArray(fields.chunk_ids) ? fields.chunk_ids.length : 0,
      replays: replays.get(record.id) ?? 0,
      created_at: record.createdAt.toISOString(),
      deleted_at: isoOrNull(record.deletedAt),
      expires_at: isoOrNull(record.expiresAt),
    };
  });
}

/** Reads the whole audit log once: a `recall_plan` event names the plan it returned (a hit). */
async function countReplays(engine: Engine, ids: Set<string>): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (ids.size === 0) return counts;
  const limit = 1000;
  let after: { chain: string; seq: number } | undefined;
  for (;;) {
    const page = await engine.store.readAudit(after === undefined ? { limit } : { after, limit });
    for (const event of page) {
      if (event.op !== 'recall_plan') continue;
      for (const id of event.recordIds) {
        if (ids.has(id)) counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
    const last = page.at(-1);
    if (page.length < limit || last === undefined) return counts;
    after = { chain: last.chain, seq: last.seq };
  }
}
