/** Bad command-line usage: the CLI prints the message and exits with code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * A failure outside mnemo the CLI can name in one line (an output file that
 * cannot be written, a port in use): it prints the message and exits with 1.
 */
export class CliFailure extends Error {
  override readonly name = 'CliFailure';
}
