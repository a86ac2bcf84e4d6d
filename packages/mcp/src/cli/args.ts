import type { ParseArgsConfig } from 'node:util';
import { ID_PATTERN, MnemoError } from '@mnemo/core';
import { DEFAULT_STORE, parseStoreSpec, type StoreSpec } from './store-spec.js';
import { UsageError } from './usage-error.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Options every command takes. */
export const COMMON_OPTIONS = {
  store: { type: 'string' },
  'pg-schema': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

/**
 * Runs a `parseArgs` call, turning its errors into `UsageError`s that name the command.
 * Commands call `parseArgs` themselves (strict, over `COMMON_OPTIONS` and their own) so
 * that the option types are inferred where they are used.
 */
export function usageErrors<T>(command: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const message = (error as Error).message
      .replace(/\.?\s*To specify a positional argument.*$/s, '')
      .replace(/^Option '(-\w, )?(--[\w-]+)[^']*'/, '$2');
    throw new UsageError(`${command}: ${message}`);
  }
}

/** The store named by `--store` / `--pg-schema` (default `duckdb:./mnemo.duckdb`). */
export function storeOf(values: { store?: string; 'pg-schema'?: string }): StoreSpec {
  return parseStoreSpec(values.store ?? DEFAULT_STORE, values['pg-schema']);
}

/** A string option's value, or a `UsageError` naming it when it is missing or empty. */
export function required(
  command: string,
  flag: string,
  value: string | boolean | string[] | undefined,
): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new UsageError(`${command}: --${flag} is required`);
  }
  return value;
}

/** Exactly one positional argument (`what` names it in messages). */
export function onePositional(
  command: string,
  positionals: readonly string[],
  what: string,
): string {
  if (positionals.length === 0) throw new UsageError(`${command}: give the ${what}`);
  if (positionals.length > 1) {
    throw new UsageError(
      `${command}: expected one ${what} argument, got ${positionals.length} (quote text with spaces)`,
    );
  }
  return positionals[0] as string;
}

export function noPositionals(command: string, positionals: readonly string[]): void {
  if (positionals.length > 0) {
    throw new UsageError(`${command}: unexpected argument '${positionals[0]}'`);
  }
}

export function parseNumber(
  flag: string,
  text: string | undefined,
  bounds: { min?: number; max?: number; integer?: boolean } = {},
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  const ok =
    text.trim() !== '' &&
    Number.isFinite(value) &&
    (bounds.integer !== true || Number.isInteger(value)) &&
    (bounds.min === undefined || value >= bounds.min) &&
    (bounds.max === undefined || value <= bounds.max);
  if (!ok) {
    const kind = bounds.integer === true ? 'an integer' : 'a number';
    const range =
      bounds.min !== undefined && bounds.max !== undefined
        ? ` from ${bounds.min} to ${bounds.max}`
        : bounds.min !== undefined
          ? ` of at least ${bounds.min}`
          : '';
    throw new UsageError(`--${flag} must be ${kind}${range}, got '${text}'`);
  }
  return value;
}

/**
 * A date (midnight UTC) or a date and time with its offset (the tools take the latter). `Date`
 * alone also reads '2030' or a time without an offset (in the machine's zone), and rolls
 * '2030-02-31' over into March.
 */
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/i;

export function parseDate(flag: string, text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const [, year, month, day] = ISO_DATE.exec(text) ?? [];
  const date = new Date(day === undefined ? Number.NaN : text);
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (Number.isNaN(date.getTime()) || calendar.getUTCDate() !== Number(day)) {
    throw new UsageError(
      `--${flag} must be an ISO 8601 date (2030-01-31) or date and time with its offset (2030-01-31T12:00:00Z), got '${text}'`,
    );
  }
  return date;
}

export function parseChoice<T extends string>(
  flag: string,
  text: string | undefined,
  choices: readonly T[],
): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text)) {
    throw new UsageError(`--${flag} must be one of ${choices.join(', ')}, got '${text}'`);
  }
  return text as T;
}

/** An agent or org id (`--agent`, `--org`): the engine's charset, checked before any I/O. */
export function checkId(command: string, flag: string, value: string | undefined): void {
  if (value !== undefined && !ID_PATTERN.test(value)) {
    throw new UsageError(`${command}: --${flag} must be 1-256 characters of A-Z a-z 0-9 . _ -`);
  }
}

/**
 * Runs an engine call, naming the argument behind a field in its `INVALID_INPUT`:
 * `expiresAt: must be in the future` becomes `--expires-at: must be in the future`. A
 * field inside the argument's value keeps its path, which says which of repeated flags
 * or where in a JSON value: `--tag (tags[1]): must not be blank`. `flags` maps an
 * engine field to its argument.
 */
export async function namingArguments<T>(
  flags: Readonly<Record<string, string>>,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!MnemoError.hasCode(error, 'INVALID_INPUT')) throw error;
    const field = error.details.field;
    if (typeof field !== 'string' || !error.message.startsWith(`${field}: `)) throw error;
    const name = Object.keys(flags).find(
      (key) => field === key || field.startsWith(`${key}.`) || field.startsWith(`${key}[`),
    );
    if (name === undefined) throw error;
    const flag = flags[name] as string;
    throw new MnemoError(
      'INVALID_INPUT',
      `${field === name ? flag : `${flag} (${field})`}${error.message.slice(field.length)}`,
      { details: { ...error.details, argument: flag }, cause: error },
    );
  }
}
