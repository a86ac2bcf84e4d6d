/**
 * A problem with the command line or with the files it names (unknown flag,
 * missing corpus folder, unreadable queries file, …). `main` prints its
 * message on one line and exits with code 2; any other error exits with 1.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
