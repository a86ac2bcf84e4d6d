import { once } from 'node:events';
import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { exportToJson } from '@mnemo/core';
import { COMMON_OPTIONS, noPositionals, storeOf, usageErrors } from '../args.js';
import { type CliIo, json, write } from '../output.js';
import { withEngine } from '../store-spec.js';
import { CliFailure, UsageError } from '../usage-error.js';

export const EXPORT_OPTIONS = {
  out: { type: 'string', short: 'o' },
} as const;

/**
 * `mnemo export [--out file]`: every record of the store (all owners, forgotten ones and
 * plans included) with its grants, one NDJSON line each (`mnemo.record.v1`), in id order.
 * A file is written under a temporary name and renamed when complete.
 */
export async function exportCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('export', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...EXPORT_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  noPositionals('export', positionals);
  const spec = storeOf(values);
  const out = values.out;
  if (out !== undefined && existsSync(out)) {
    throw new UsageError(`--out ${out} exists; name a new file`);
  }
  const count = await withEngine(spec, { existing: true }, async (engine) => {
    if (out === undefined) return writeRecords(engine.exportRecords(), io.stdout);
    const partial = `${out}.partial-${process.pid}`;
    const file = createWriteStream(partial, { flags: 'wx' });
    try {
      await once(file, 'open');
    } catch (error) {
      throw new CliFailure(`cannot write --out ${out}: ${(error as Error).message}`);
    }
    // A later failure (a full disk) reaches `write` and `finished` as the stream's error.
    file.on('error', () => undefined);
    try {
      const written = await writeRecords(engine.exportRecords(), file);
      file.end();
      await finished(file);
      await rename(partial, out);
      return written;
    } catch (error) {
      file.destroy();
      await rm(partial, { force: true });
      throw error;
    }
  });
  const summary = { exported: count, ...(out === undefined ? {} : { file: out }) };
  // stdout may be the export itself: the summary goes to stderr.
  await write(
    io.stderr,
    values.json === true
      ? json(summary)
      : `exported ${count} record${count === 1 ? '' : 's'}${out === undefined ? '' : ` to ${out}`}\n`,
  );
  return 0;
}

async function writeRecords(
  records: AsyncIterable<Parameters<typeof exportToJson>[0]>,
  stream: Writable,
): Promise<number> {
  let count = 0;
  for await (const item of records) {
    await write(stream, json(exportToJson(item)));
    count += 1;
  }
  return count;
}
