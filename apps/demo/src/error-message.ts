/** The message of anything thrown, on one line. */
export function errorMessage(error: unknown): string {
  return oneLine(messageOf(error));
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // Node reports a refused connection to every address of a host (::1 and 127.0.0.1 for
  // localhost) as an AggregateError without a message of its own.
  if (error.message === '' && error instanceof AggregateError) {
    return error.errors.map(messageOf).join('; ');
  }
  return error.message;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
