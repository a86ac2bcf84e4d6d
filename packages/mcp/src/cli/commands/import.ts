import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { type ExportedRecord, exportFromJson, MnemoError } from '@mnemo/core';
import { COMMON_OPTIONS, noPositionals, storeOf, usageErrors } from '../args.js';
import { type CliIo, json, write } from '../output.js';
import { withEngine } from '../store-spec.js';
import { UsageError } from '../usage-error.js';

export const IMPORT_OPTIONS = {
  in: { type: 'string', short: 'i' },
} as const;

/**
 * `mnemo import [--in file]`: writes the records of an NDJSON export (from stdin, or a
 * file) into the store, every field and grant kept, each record's hash checked. The whole
 * input is validated before anything is written: one bad line (exit 2, naming the line)
 * imports nothing. Records whose id already exists are skipped, so an interrupted import
 * can be run again.
 */
export async function importCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('import', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...IMPORT_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  noPositionals('import', positionals);
  const spec = storeOf(values);
  const file = values.in;
  let records: Iterable<ExportedRecord> | AsyncIterable<ExportedRecord>;
  if (file === undefined) {
    // Standard input can be read once: keep the parsed records.
    const parsed: ExportedRecord[] = [];
    for await (const record of parseLines(lines(io.stdin))) parsed.push(record);
    records = parsed;
  } else {
    // A file is read twice: validated whole first, then streamed into the store.
    await checkFile(file);
    await count(parseLines(lines(openFile(file))));
    records = parseLines(lines(openFile(file)));
  }
  const result = await withEngine(spec, {}, (engine) => engine.importRecords(records));
  await write(
    io.stdout,
    values.json === true
      ? json(result)
      : `imported ${result.imported} record${result.imported === 1 ? '' : 's'}, skipped ${result.skipped} already present\n`,
  );
  return 0;
}

async function checkFile(path: string): Promise<void> {
  const info = await stat(path).catch(() => null);
  if (info === null || !info.isFile()) throw new UsageError(`--in ${path}: no such file`);
}

async function count(items: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const _ of items) n += 1;
  return n;
}

function openFile(path: string): Readable {
  return createReadStream(path, { encoding: 'utf8' });
}

async function* lines(input: Readable): AsyncGenerator<string> {
  const reader = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of reader) yield line;
  } catch (error) {
    throw new MnemoError('INVALID_INPUT', `cannot read the input: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** One record per non-blank line; a bad line is `INVALID_INPUT` naming it (`line 7: …`). */
async function* parseLines(input: AsyncIterable<string>): AsyncGenerator<ExportedRecord> {
  let number = 0;
  for await (const line of input) {
    number += 1;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new MnemoError('INVALID_INPUT', `line ${number}: is not valid JSON`, {
        details: { field: `line ${number}` },
      });
    }
    yield exportFromJson(value, `line ${number}`);
  }
}
