/**
 * Stable error codes. A code never changes meaning once released; new codes
 * may be added.
 */
export const ERROR_CODES = [
  'INVALID_INPUT',
  'NOT_FOUND',
  'PERMISSION_DENIED',
  'EMBEDDER_NOT_CONFIGURED',
  'EMBEDDER_FAILED',
  'EXPERIENCE_DISABLED',
  'DIMENSION_MISMATCH',
  'STORE_UNAVAILABLE',
  'STORE_CORRUPT',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const MARKER = Symbol.for('@mnemo/core/MnemoError');

export interface MnemoErrorOptions {
  /** The underlying error (for example a driver error), kept for diagnosis. */
  cause?: unknown;
  /** Structured context: the offending field, an index, a record id. */
  details?: Readonly<Record<string, unknown>>;
}

/**
 * The one error type mnemo throws. Branch on `code`, never on `message`.
 * `MnemoError.isInstance` works across duplicated copies of this package.
 */
export class MnemoError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;
  // The marker `isInstance` looks for: survives duplicated copies of this package.
  protected readonly [MARKER] = true;

  constructor(code: ErrorCode, message: string, options: MnemoErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MnemoError';
    this.code = code;
    this.details = Object.freeze({ ...(options.details ?? {}) });
  }

  static isInstance(value: unknown): value is MnemoError {
    return typeof value === 'object' && value !== null && MARKER in value;
  }

  /** True when `value` is a MnemoError with the given code (narrowing `code` to it). */
  static hasCode<C extends ErrorCode>(
    value: unknown,
    code: C,
  ): value is MnemoError & { readonly code: C } {
    return MnemoError.isInstance(value) && value.code === code;
  }
}

/** Shorthand for the most common error: bad input, with the field that is wrong. */
export function invalidInput(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `${field}: ${message}`, { details: { field } });
}
