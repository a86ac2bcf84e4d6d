import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from './errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parsed flag values by name (no flag is `multiple`). */
export type FlagValues = Record<string, string | boolean | undefined>;

/**
 * Parses `argv` strictly with node:util's parseArgs (no positionals, no
 * unknown flags); a leading `--`, as in `pnpm bench recall -- --data x`, is
 * ignored. Any failure is a `UsageError`.
 */
export function parseFlags(argv: readonly string[], options: Options): FlagValues {
  try {
    return parseArgs({
      args: argv[0] === '--' ? argv.slice(1) : [...argv],
      options,
      strict: true,
      allowPositionals: false,
    }).values as FlagValues;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** The value of the string flag `--name`, which must not be blank when given. */
export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new UsageError(`--${name} needs a value`);
  if (value.trim() === '') throw new UsageError(`--${name} must not be empty`);
  return value;
}

/** Whether the boolean flag `--name` was given. */
export function booleanFlag(values: FlagValues, name: string): boolean {
  return values[name] === true;
}

/** A positive integer flag (`default` when absent). */
export function positiveInteger(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${flag} must be a positive integer, got '${value}'`);
  }
  return Number(value);
}

/** A flag whose value is one of `allowed` (`fallback` when absent). */
export function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) {
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got '${value}'`);
  }
  return found;
}
