import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { AuditHead, AuditVerification } from '@mnemo/core';
import { renderHead, renderProblem } from '../../render.js';
import { COMMON_OPTIONS, noPositionals, storeOf, usageErrors } from '../args.js';
import { type CliIo, json, table, write } from '../output.js';
import { withEngine } from '../store-spec.js';
import { UsageError } from '../usage-error.js';

export const AUDIT_VERIFY_OPTIONS = {
  'known-heads': { type: 'string' },
} as const;

/** Exit code when the log fails verification (as opposed to 1, the check could not run). */
export const AUDIT_FAILED = 3;

/**
 * `mnemo audit verify`: checks every hash chain of the audit log, and with `--known-heads`
 * that no chain lost its tail since those heads were kept. Exit 0 when intact, 3 when not.
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
  const result = await withEngine(spec, { existing: true }, (engine) =>
    engine.verifyAudit(knownHeads === undefined ? {} : { knownHeads }),
  );
  await write(io.stdout, values.json === true ? json(renderVerification(result)) : text(result));
  return result.ok ? 0 : AUDIT_FAILED;
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
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new UsageError(
      `--known-heads ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : 'is not valid JSON'}`,
    );
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
