/** Where a benchmark writes: its figures to `out` (stdout), progress and tables to `err` (stderr). */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export const processOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** An output that keeps every line, for tests. */
export function memoryOutput(): Output & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (line) => stdout.push(line),
    err: (line) => stderr.push(line),
  };
}

/** The one JSON line a benchmark prints last on stdout. */
export function jsonLine(result: object): string {
  return JSON.stringify(result);
}

/**
 * A plain text table: the first row is the header; columns are left-aligned
 * except those whose every body cell looks like a number, which are
 * right-aligned.
 */
export function formatTable(rows: readonly (readonly string[])[]): string[] {
  const [header, ...body] = rows;
  if (header === undefined) return [];
  const widths = header.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length)));
  const numeric = header.map(
    (_, c) =>
      body.length > 0 && body.every((row) => /^[-+]?[\d.,]+[%x]?$|^n\/a$/.test(row[c] ?? '')),
  );
  const line = (row: readonly string[]) =>
    row
      .map((cell, c) =>
        numeric[c] ? cell.padStart(widths[c] as number) : cell.padEnd(widths[c] as number),
      )
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)];
}
