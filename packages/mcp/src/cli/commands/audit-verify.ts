import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { AuditHead, AuditVerification, RecordVerification } from '@mnemo/core';
import { renderHead, renderProblem } from '../../render.js';
import { COMMON_OPTIONS, namingArguments, noPositionals, storeOf, usageErrors } from '../args.js';
import { type CliIo, json, table, write } from '../output.js';
import { withEngine } from '../store-spec.js';
import { UsageError } from '../usage-error.js';

export const AUDIT_VERIFY_OPTIONS = {
  'known-heads': { type: 'string' },
  records: { type: 'boolean' },
} as const;

/** Exit code when the log fails verification (as opposed to 1, the check could not run). */
export const AUDIT_FAILED = 3;

/**
 * `mnemo audit verify`: checks every hash chain of the audit log, with `--known-heads`
 * that no chain lost its tail since those heads were kept, and with `--records` every
 * record against its hash and the log. Exit 0 when intact, 3 when not.
 */
export async function auditVerify(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('audit verify', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...AUDIT_VERIFY_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  noPositionals('audit verify', positionals);
  const spec = storeOf(values);
  const knownHeads =
    values['known-heads'] === undefined ? undefined : await readHeads(values['known-heads']);
  const [result, records] = await withEngine(spec, { existing: true }, async (engine) => [
    await namingArguments({ knownHeads: '--known-heads' }, () =>
      engine.verifyAudit(knownHeads === undefined ? {} : { knownHeads }),
    ),
    values.records === true ? await engine.verifyRecords() : null,
  ]);
  await write(
    io.stdout,
    values.json === true
      ? json({
          ...renderVerification(result),
          ...(records === null ? {} : { records: renderRecordVerification(records) }),
        })
      : text(result) + (records === null ? '' : recordsText(records)),
  );
  return result.ok && (records?.ok ?? true) ? 0 : AUDIT_FAILED;
}

function renderRecordVerification(result: RecordVerification) {
  return {
    ok: result.ok,
    records: result.records,
    problems: result.problems.map((problem) => ({
      kind: problem.kind,
      record_id: problem.recordId,
      position: problem.position,
      message: problem.message,
    })),
  };
}

function recordsText(result: RecordVerification): string {
  const summary = `${result.records} record${result.records === 1 ? '' : 's'}`;
  if (result.ok) return `records ok: ${summary}\n`;
  return `records FAILED: ${result.problems.length} problem${result.problems.length === 1 ? '' : 's'} in ${summary}\n${table(
    ['position', 'record', 'problem', 'message'],
    result.problems.map((problem) => [
      String(problem.position),
      problem.recordId,
      problem.kind,
      problem.message,
    ]),
    [0],
  )}`;
}

export function renderVerification(result: AuditVerification) {
  return {
    ok: result.ok,
    events: result.events,
    chains: result.chains,
    problems: result.problems.map(renderProblem),
    heads: result.heads.map(renderHead),
  };
}

function text(result: AuditVerification): string {
  const summary = `${result.events} events in ${result.chains} chain${result.chains === 1 ? '' : 's'}`;
  if (result.ok) return `audit ok: ${summary}\n`;
  return `audit FAILED: ${result.problems.length} of ${summary} failed\n${table(
    ['chain', 'seq', 'problem', 'message'],
    result.problems.map((problem) => [
      problem.chain,
      String(problem.seq),
      problem.kind,
      problem.message,
    ]),
    [1],
  )}`;
}

/**
 * Heads kept from an earlier run: the `--json` output of `mnemo audit verify` (its `heads`)
 * or a bare array of `{ chain, seq, hash }`.
 */
async function readHeads(path: string): Promise<AuditHead[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    throw new UsageError(
      `--known-heads ${path}: ${code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (error as Error).message})`}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--known-heads ${path}: is not valid JSON`);
  }
  const heads =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as { heads?: unknown }).heads
      : value;
  if (
    !Array.isArray(heads) ||
    !heads.every(
      (head) =>
        typeof head === 'object' &&
        head !== null &&
        typeof head.chain === 'string' &&
        Number.isInteger(head.seq) &&
        typeof head.hash === 'string',
    )
  ) {
    throw new UsageError(
      `--known-heads ${path}: expected the --json output of 'mnemo audit verify' or an array of { chain, seq, hash }`,
    );
  }
  return heads.map((head: AuditHead) => ({ chain: head.chain, seq: head.seq, hash: head.hash }));
}
