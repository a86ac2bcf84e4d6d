import type { Readable, Writable } from 'node:stream';

/** The streams a command talks to. */
export interface CliIo {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly stderr: Writable;
}

/**
 * Output streams whose broken pipe the running command handles itself (`serve` over
 * stdio: its client went away). On any other the CLI exits as SIGPIPE would (see cli.ts).
 */
export const brokenPipeHandled = new WeakSet<Writable>();

/**
 * Writes `text`, waiting while the stream's buffer is full (large exports).
 * Rejects once the stream has failed (a full disk, a reader gone), so a long
 * export stops instead of waiting for a drain that will never come.
 */
export async function write(stream: Writable, text: string): Promise<void> {
  if (stream.errored) throw stream.errored;
  if (stream.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      stream.off('drain', done);
      stream.off('error', done);
      stream.off('close', closed);
      if (error) reject(error);
      else resolve();
    };
    const closed = () => done(stream.errored ?? new Error('the output stream closed'));
    stream.once('drain', done);
    stream.once('error', done);
    stream.once('close', closed);
  });
}

/** One JSON document on a line. */
export function json(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: that is what it escapes
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text on one line for a terminal: runs of whitespace become one space, other
 * control characters show as `\x1b` (so a memory cannot move the cursor or
 * retitle the window of whoever reads it), cut to `max` characters with `…`.
 */
export function oneLine(text: string, max: number): string {
  const flat = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  const characters = [...flat];
  return characters.length <= max ? flat : `${characters.slice(0, max - 1).join('')}…`;
}

/**
 * An aligned table: a header row, then the rows; columns separated by two spaces. Columns
 * listed in `right` are right-aligned (numbers). The last column is not padded.
 */
export function table(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  right: readonly number[] = [],
): string {
  const widths = headers.map((header, column) =>
    Math.max([...header].length, ...rows.map((row) => [...(row[column] ?? '')].length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        if (right.includes(column)) return cell.padStart(width);
        return column === cells.length - 1 ? cell : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

/** `key  value` lines, keys aligned. */
export function fields(entries: readonly (readonly [string, string])[]): string {
  const width = Math.max(...entries.map(([key]) => key.length));
  return `${entries.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join('\n')}\n`;
}

/** A date as people read it in a table: `2026-11-30 14:05:09Z`. */
export function shortDate(value: Date | string | null): string {
  if (value === null) return '-';
  const iso = typeof value === 'string' ? value : value.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`;
}
