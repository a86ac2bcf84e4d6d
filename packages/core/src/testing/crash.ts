import { spawn } from 'node:child_process';
import type { Engine } from '../engine/create-engine.js';
import { tally } from './reliability-tally.js';

/**
 * Crash-safety kit: a writer process remembers records until it is killed
 * with SIGKILL, printing each write as soon as it is acknowledged; the test
 * then reopens the store and checks that every acknowledged write is there,
 * unchanged, and that both verifications pass (no half-written record, no
 * orphan audit event). A store's crash test is a small writer script that
 * opens the store and calls `runCrashWriter`, and a loop of `crashRound` and
 * `checkAcknowledged`.
 */

/** One acknowledged write, as the writer printed it. */
export interface Ack {
  agentId: string;
  id: string;
  contentHash: string;
  content: string;
}

export interface CrashWriterOptions {
  /** Agents written as, round robin (default 4). */
  agents?: number;
  /** Calls in flight at once (default 8): concurrent writes share transactions. */
  inFlight?: number;
  /** Makes contents unique across rounds on the same store (default the process id). */
  tag?: string;
}

/**
 * Initializes the engine's store, prints `ready`, then remembers records with
 * `inFlight` calls in flight (single `remember`s and `rememberMany`s of five)
 * until the process is killed. Every record is printed (`ack` line, one JSON
 * object) only after its call resolved, that is, after its transaction
 * committed; stdout writes to a pipe are synchronous on Linux, so a printed
 * line was acknowledged before any later kill.
 */
export async function runCrashWriter(
  engine: Engine,
  options: CrashWriterOptions = {},
): Promise<never> {
  const agents = options.agents ?? 4;
  const tag = options.tag ?? String(process.pid);
  await engine.init();
  process.stdout.write('ready\n');
  let next = 0;
  const worker = async (): Promise<never> => {
    for (;;) {
      const n = next;
      next += 1;
      const agentId = `crash-agent-${n % agents}`;
      const handle = engine.as(agentId);
      const content = (i: number) =>
        `crash ${tag} write ${n}.${i}: the agent noted fact number ${n * 7 + i}`;
      const acked =
        n % 5 === 4
          ? await handle
              .rememberMany([0, 1, 2, 3, 4].map((i) => ({ content: content(i) })))
              .then((results) => results.map((result, i) => ({ ...result, content: content(i) })))
          : [{ ...(await handle.remember({ content: content(0) })), content: content(0) }];
      for (const { id, contentHash, content: text } of acked) {
        process.stdout.write(
          `ack ${JSON.stringify({ agentId, id, contentHash, content: text })}\n`,
        );
      }
    }
  };
  return Promise.race(Array.from({ length: options.inFlight ?? 8 }, worker));
}

export interface CrashRoundOptions {
  /** The writer: a program that opens the store and calls `runCrashWriter`. */
  command: string;
  args: readonly string[];
  cwd?: string;
  /** How long after its first acknowledged write the writer is killed with SIGKILL. */
  killAfterMs: number;
}

/**
 * Runs the writer, kills it with SIGKILL `killAfterMs` after its first
 * acknowledged write, and returns what it acknowledged.
 */
export function crashRound(options: CrashRoundOptions): Promise<Ack[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acks: Ack[] = [];
    let pending = '';
    let stderr = '';
    let killed = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      // The last piece is an unfinished line (or empty): it waits for more data.
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('ack ')) continue;
        acks.push(JSON.parse(line.slice(4)) as Ack);
        // Timed from the first write, not from `ready`: on a loaded machine that write can
        // take longer than the shortest kill time, and a round killed before it proves nothing.
        if (acks.length === 1) {
          setTimeout(() => {
            killed = true;
            child.kill('SIGKILL');
          }, options.killAfterMs);
        }
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (killed && signal === 'SIGKILL') resolve(acks);
      else
        reject(
          new Error(`the writer exited by itself (code ${code}, signal ${signal}):\n${stderr}`),
        );
    });
  });
}

export interface AcknowledgedCheck {
  /** Acknowledged writes looked up. */
  checked: number;
  /** Those missing, or whose content or hash changed. */
  lost: Ack[];
}

/** Looks every acknowledged write up through its agent's handle. */
export async function checkAcknowledged(
  engine: Engine,
  acks: readonly Ack[],
): Promise<AcknowledgedCheck> {
  const byAgent = new Map<string, Ack[]>();
  for (const ack of acks) byAgent.set(ack.agentId, [...(byAgent.get(ack.agentId) ?? []), ack]);
  const lost: Ack[] = [];
  for (const [agentId, agentAcks] of byAgent) {
    const handle = engine.as(agentId);
    for (let start = 0; start < agentAcks.length; start += 1000) {
      const batch = agentAcks.slice(start, start + 1000);
      const found = new Map(
        (await handle.getMany(batch.map((ack) => ack.id))).map((record) => [record.id, record]),
      );
      for (const ack of batch) {
        const record = found.get(ack.id);
        if (record?.content !== ack.content || record.contentHash !== ack.contentHash)
          lost.push(ack);
      }
    }
  }
  return { checked: acks.length, lost };
}

export interface CrashRoundsOptions {
  rounds: number;
  /** The writer of a round; `tag` makes its contents unique. */
  writer(tag: string): Omit<CrashRoundOptions, 'killAfterMs'>;
  /** An engine on the store the writers write to, and how to close it. */
  open(): Promise<{ engine: Engine; close(): Promise<void> }>;
  /**
   * Kill times are drawn from [minKillMs, maxKillMs) (default 150 to 1,500 ms
   * after the first acknowledged write).
   */
  minKillMs?: number;
  maxKillMs?: number;
  /** Seeds the kill times (default: the current time); reported so a failure can be replayed. */
  seed?: number;
}

export interface CrashRoundReport {
  round: number;
  killAfterMs: number;
  /** Writes acknowledged in this round. */
  acknowledged: number;
  /** Writes acknowledged in this round and every earlier one, all looked up again. */
  checked: number;
  lost: Ack[];
  auditProblems: unknown[];
  recordProblems: unknown[];
}

/**
 * `rounds` times: run a writer against the same store, kill it at a random
 * moment, reopen the store, look up every write acknowledged so far and run
 * both verifications. Tallies rounds, newly acknowledged writes and lost ones.
 */
export async function runCrashRounds(options: CrashRoundsOptions): Promise<{
  seed: number;
  reports: CrashRoundReport[];
}> {
  const seed = options.seed ?? Date.now();
  let state = seed >>> 0;
  // A small linear congruential generator: enough to spread the kill times reproducibly.
  const random = () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
  const min = options.minKillMs ?? 150;
  const max = options.maxKillMs ?? 1_500;
  const acknowledged: Ack[] = [];
  const lostIds = new Set<string>();
  const reports: CrashRoundReport[] = [];
  for (let round = 0; round < options.rounds; round += 1) {
    const killAfterMs = Math.floor(min + random() * (max - min));
    const acks = await crashRound({ ...options.writer(`${seed}-${round}`), killAfterMs });
    acknowledged.push(...acks);
    const { engine, close } = await options.open();
    try {
      const { checked, lost } = await checkAcknowledged(engine, acknowledged);
      const audit = await engine.verifyAudit();
      const records = await engine.verifyRecords();
      // Each write counted once: when first acknowledged, and when first found lost.
      const newlyLost = lost.filter((ack) => !lostIds.has(ack.id));
      for (const ack of newlyLost) lostIds.add(ack.id);
      tally({
        crashRounds: 1,
        acknowledgedWritesChecked: acks.length,
        lostWrites: newlyLost.length,
      });
      reports.push({
        round,
        killAfterMs,
        acknowledged: acks.length,
        checked,
        lost,
        auditProblems: audit.problems,
        recordProblems: records.problems,
      });
    } finally {
      await close();
    }
  }
  return { seed, reports };
}

/**
 * What went wrong in `reports`, round by round: nothing acknowledged (the
 * round proved nothing), lost writes, audit or record problems. Empty when
 * every round held.
 */
export function crashFindings(
  reports: readonly CrashRoundReport[],
): { round: number; killAfterMs: number; finding: string; details: unknown }[] {
  return reports.flatMap(
    ({ round, killAfterMs, acknowledged, lost, auditProblems, recordProblems }) =>
      [
        { finding: 'nothing acknowledged', details: null, found: acknowledged === 0 },
        { finding: 'lost writes', details: lost, found: lost.length > 0 },
        { finding: 'audit problems', details: auditProblems, found: auditProblems.length > 0 },
        { finding: 'record problems', details: recordProblems, found: recordProblems.length > 0 },
      ]
        .filter(({ found }) => found)
        .map(({ finding, details }) => ({ round, killAfterMs, finding, details })),
  );
}
