import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@mnemo/core';
import { crashFindings, runCrashRounds } from '@mnemo/core/testing';
import { afterAll, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

// A few rounds by default; MNEMO_RELIABILITY_FULL=1 (pnpm test:reliability --full) runs 25.
const ROUNDS = process.env.MNEMO_RELIABILITY_FULL === '1' ? 25 : 4;
const here = dirname(fileURLToPath(import.meta.url));
const schema = uniqueSchema('crash');
afterAll(() => dropSchema(schema));

describePostgres('crash safety', () => {
  it(`keeps every acknowledged write through ${ROUNDS} SIGKILLs of a writer process`, async () => {
    const { seed, reports } = await runCrashRounds({
      rounds: ROUNDS,
      writer: (tag) => ({
        command: process.execPath,
        args: [join(here, 'fixtures', 'crash-writer.mjs'), PG_URL as string, schema, tag],
        cwd: here,
      }),
      open: async () => {
        const store = createPostgresStore({ connectionString: PG_URL as string, schema });
        await store.init();
        return { engine: createEngine({ store }), close: () => store.close() };
      },
    });
    // Every round was killed mid-workload, after acknowledging writes, and lost none of them.
    expect({ seed, findings: crashFindings(reports) }).toEqual({ seed, findings: [] });
  }, 300_000);
});
