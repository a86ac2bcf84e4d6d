/** Bad command-line arguments or an unusable input file: one line on stderr, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The message of anything thrown, on one line. */
export function errorMessage(error: unknown): string {
  return messageOf(error)
    .replace(/\s*\n\s*/g, ' ')
    .trim();
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // Node reports a refused connection to every address of a host as an
  // AggregateError without a message of its own.
  if (error.message === '' && error instanceof AggregateError) {
    return error.errors.map(messageOf).join('; ');
  }
  return error.message;
}
