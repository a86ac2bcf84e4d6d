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
  const seen = newSeen();
  if (file === undefined) {
    // Standard input can be read once: keep the parsed records.
    const parsed: ExportedRecord[] = [];
    for await (const record of parseLines(lines(io.stdin), seen)) parsed.push(record);
    records = parsed;
  } else {
    // A file is read twice: validated whole first, then streamed into the store.
    await checkFile(file);
    await count(parseLines(lines(openFile(file)), seen));
    records = parseLines(lines(openFile(file)), newSeen());
  }
  const result = await withEngine(spec, {}, async (engine) => {
    // The store's embedding size, checked before the first chunk is written.
    const size = await engine.store.embeddingDimensions();
    const embeddings = seen.dimensions;
    if (size !== null && embeddings !== null && embeddings.size !== size) {
      throw new MnemoError(
        'DIMENSION_MISMATCH',
        `line ${embeddings.line}: a ${embeddings.size}-dimensional embedding, but the store holds ${size}-dimensional ones`,
      );
    }
    return engine.importRecords(records);
  });
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
  if (info?.isDirectory()) throw new UsageError(`--in ${path}: is a directory, not a file`);
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

/** What a pass over the lines has seen: each record id's line, the first embedding's size. */
interface Seen {
  ids: Map<string, number>;
  dimensions: { size: number; line: number } | null;
}

const newSeen = (): Seen => ({ ids: new Map(), dimensions: null });

function badLine(line: number, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `line ${line}: ${message}`, {
    details: { field: `line ${line}` },
  });
}

/**
 * One record per non-blank line; a bad line is `INVALID_INPUT` naming it
 * (`line 7: …`), as is a line that repeats an earlier line's record id or
 * whose embedding size differs from the first one's.
 */
async function* parseLines(
  input: AsyncIterable<string>,
  seen: Seen,
): AsyncGenerator<ExportedRecord> {
  let number = 0;
  for await (const line of input) {
    number += 1;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw badLine(number, 'is not valid JSON');
    }
    const item = exportFromJson(value, `line ${number}`);
    const { id, embedding } = item.record;
    const earlier = seen.ids.get(id);
    if (earlier !== undefined) throw badLine(number, `record ${id} repeats line ${earlier}`);
    seen.ids.set(id, number);
    if (embedding !== null) {
      seen.dimensions ??= { size: embedding.length, line: number };
      if (embedding.length !== seen.dimensions.size) {
        throw badLine(
          number,
          `a ${embedding.length}-dimensional embedding, where line ${seen.dimensions.line} has ${seen.dimensions.size} dimensions`,
        );
      }
    }
    yield item;
  }
}
