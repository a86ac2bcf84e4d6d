import { invalidInput } from '../errors.js';
import type { MemoryStore } from '../ports/memory-store.js';
import { validateArray, validatePageSize } from '../validation.js';
import { type AuditEvent, type AuditHead, auditEventHash, GENESIS_HASH } from './audit-event.js';

export type AuditProblemKind =
  | 'hash_mismatch'
  | 'broken_link'
  | 'seq_gap'
  | 'head_mismatch'
  | 'missing_head'
  | 'truncated';

export interface AuditProblem {
  kind: AuditProblemKind;
  chain: string;
  /** The seq at which the chain first goes wrong. */
  seq: number;
  /** The id of the offending event, when there is one. */
  eventId: string | null;
  message: string;
}

export interface AuditVerification {
  ok: boolean;
  /** Events read. */
  events: number;
  /** Chains seen. */
  chains: number;
  /** The first problem of each bad chain, ordered by chain. */
  problems: AuditProblem[];
  /** The verified head of every chain: keep them to detect a truncated tail later. */
  heads: AuditHead[];
}

export interface VerifyAuditOptions {
  /**
   * Heads the application kept from an earlier verification or write. A chain
   * that no longer reaches one of them (missing, shorter, or different at that
   * seq) is reported as `truncated`. Several heads of one chain (kept from
   * several verifications) are each checked.
   */
  knownHeads?: readonly AuditHead[];
  /** Events per store read (default 1000). */
  pageSize?: number;
}

/** Reads every event once, in chain order, and checks hashes, links, positions and heads. */
export async function verifyAudit(
  store: MemoryStore,
  options: VerifyAuditOptions = {},
): Promise<AuditVerification> {
  const pageSize = validatePageSize(options.pageSize, 1000);
  const given: unknown = options.knownHeads ?? [];
  if (!Array.isArray(given))
    throw invalidInput('knownHeads', 'must be an array of { chain, seq, hash }');
  const knownHeads = validateArray('knownHeads', given, Number.POSITIVE_INFINITY);
  for (const [index, head] of knownHeads.entries()) {
    const h = head as Partial<AuditHead> | null;
    if (
      typeof h !== 'object' ||
      h === null ||
      typeof h.chain !== 'string' ||
      !Number.isInteger(h.seq) ||
      (h.seq as number) < 1 ||
      typeof h.hash !== 'string'
    ) {
      throw invalidInput(
        `knownHeads[${index}]`,
        'must be { chain: string, seq: integer ≥ 1, hash: string }',
      );
    }
  }
  // The heads are read before the events and, when a chain's events end elsewhere, again after
  // them: calls running meanwhile append events, so an honest chain reaches the first head and
  // ends at or before the second. In a store left alone the two are the same.
  const recordedHeads = new Map((await store.auditHeads()).map((head) => [head.chain, head]));
  // Every known head counts, several of one chain too (the heads of several verifications),
  // lowest seq first, so that the first one a chain no longer reaches is the one reported.
  const known = [...(knownHeads as AuditHead[])].sort((a, b) => a.seq - b.seq);
  const knownSeqs = new Map<string, Set<number>>();
  for (const head of known) {
    const seqs = knownSeqs.get(head.chain);
    if (seqs === undefined) knownSeqs.set(head.chain, new Set([head.seq]));
    else seqs.add(head.seq);
  }
  const problems = new Map<string, AuditProblem>();
  const verifiedHeads = new Map<string, AuditHead>();
  // The hash at each known-head seq we passed (by chain, then seq), and at each chain's
  // recorded-head seq, to compare later.
  const seenAtKnownSeq = new Map<string, Map<number, string>>();
  const seenAtRecordedSeq = new Map<string, string>();
  let events = 0;

  const report = (problem: AuditProblem) => {
    if (!problems.has(problem.chain)) problems.set(problem.chain, problem);
  };

  let previous: AuditEvent | null = null;
  let after: { chain: string; seq: number } | undefined;
  for (;;) {
    const page = await store.readAudit(
      after === undefined ? { limit: pageSize } : { after, limit: pageSize },
    );
    for (const event of page) {
      events += 1;
      const sameChain = previous !== null && previous.chain === event.chain;
      const expectedSeq = sameChain ? (previous as AuditEvent).seq + 1 : 1;
      const expectedPrev = sameChain ? (previous as AuditEvent).hash : GENESIS_HASH;
      if (!problems.has(event.chain)) {
        const { hash, ...unsigned } = event;
        if (event.seq !== expectedSeq) {
          report({
            kind: 'seq_gap',
            chain: event.chain,
            seq: expectedSeq,
            eventId: event.id,
            message: `chain ${event.chain}: expected seq ${expectedSeq}, found ${event.seq}`,
          });
        } else if (auditEventHash(unsigned) !== hash) {
          report({
            kind: 'hash_mismatch',
            chain: event.chain,
            seq: event.seq,
            eventId: event.id,
            message: `chain ${event.chain}: event ${event.seq} does not match its hash`,
          });
        } else if (event.prevHash !== expectedPrev) {
          report({
            kind: 'broken_link',
            chain: event.chain,
            seq: event.seq,
            eventId: event.id,
            message: `chain ${event.chain}: event ${event.seq} is not chained to the event before it`,
          });
        } else {
          verifiedHeads.set(event.chain, { chain: event.chain, seq: event.seq, hash: event.hash });
          if (knownSeqs.get(event.chain)?.has(event.seq)) {
            const seen = seenAtKnownSeq.get(event.chain) ?? new Map<number, string>();
            seenAtKnownSeq.set(event.chain, seen.set(event.seq, event.hash));
          }
          if (recordedHeads.get(event.chain)?.seq === event.seq)
            seenAtRecordedSeq.set(event.chain, event.hash);
        }
      }
      previous = event;
    }
    const last = page.at(-1);
    if (page.length < pageSize || last === undefined) break;
    after = { chain: last.chain, seq: last.seq };
  }

  const chains = new Set([...verifiedHeads.keys(), ...problems.keys(), ...recordedHeads.keys()]);
  let headsAfter: Map<string, AuditHead> | undefined;
  for (const chain of chains) {
    if (problems.has(chain)) continue;
    const head = verifiedHeads.get(chain);
    const before = recordedHeads.get(chain);
    if (before !== undefined && head?.seq === before.seq && head.hash === before.hash) continue;
    headsAfter ??= new Map((await store.auditHeads()).map((after) => [after.chain, after]));
    const recorded = headsAfter.get(chain);
    const grewMeanwhile =
      head !== undefined &&
      recorded !== undefined &&
      (before === undefined ||
        (head.seq > before.seq && seenAtRecordedSeq.get(chain) === before.hash)) &&
      (head.seq < recorded.seq || (head.seq === recorded.seq && head.hash === recorded.hash));
    if (grewMeanwhile) continue;
    if (recorded === undefined) {
      report({
        kind: 'missing_head',
        chain,
        seq: head?.seq ?? 0,
        eventId: null,
        message: `chain ${chain} has events but no recorded head`,
      });
    } else {
      report({
        kind: 'head_mismatch',
        chain,
        seq: Math.min(head?.seq ?? 0, recorded.seq) + 1,
        eventId: null,
        message: `chain ${chain}: recorded head is seq ${recorded.seq}, the events end at seq ${head?.seq ?? 0}`,
      });
    }
  }
  for (const knownHead of known) {
    if (problems.has(knownHead.chain)) continue;
    if (seenAtKnownSeq.get(knownHead.chain)?.get(knownHead.seq) !== knownHead.hash) {
      const head = verifiedHeads.get(knownHead.chain);
      report({
        kind: 'truncated',
        chain: knownHead.chain,
        seq: Math.min(head?.seq ?? 0, knownHead.seq) + 1,
        eventId: null,
        message: `chain ${knownHead.chain} no longer reaches the known head at seq ${knownHead.seq}`,
      });
    }
  }

  const sortedProblems = [...problems.values()].sort((a, b) =>
    a.chain < b.chain ? -1 : a.chain > b.chain ? 1 : 0,
  );
  const allChains = new Set([...chains, ...knownSeqs.keys()]);
  return {
    ok: sortedProblems.length === 0,
    events,
    chains: allChains.size,
    problems: sortedProblems,
    heads: [...verifiedHeads.values()].sort((a, b) =>
      a.chain < b.chain ? -1 : a.chain > b.chain ? 1 : 0,
    ),
  };
}
