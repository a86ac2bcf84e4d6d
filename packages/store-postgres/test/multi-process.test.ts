import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@mnemo/core';
import { afterAll, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { describePostgres, dropSchema, PG_URL, uniqueSchema } from './database.js';

const WORKERS = 4;
const PER_WORKER = 1000;
const writer = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'writer.mjs');
const schema = uniqueSchema('multiprocess');

afterAll(() => dropSchema(schema));

function run(worker: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [writer, PG_URL as string, schema, String(worker), String(PER_WORKER)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.on('exit', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`worker ${worker} exited ${code}: ${output}`)),
    );
  });
}

describePostgres('several processes on one database', () => {
  it('4 processes × 1,000 remembers as one agent: every record lands, every event is chained', async () => {
    const outputs = await Promise.all(Array.from({ length: WORKERS }, (_, worker) => run(worker)));
    expect(outputs.map((output) => output.trim())).toEqual([
      'worker 0 done',
      'worker 1 done',
      'worker 2 done',
      'worker 3 done',
    ]);

    const store = createPostgresStore({ connectionString: PG_URL as string, schema });
    const engine = createEngine({ store });
    await engine.init();
    try {
      const records = await store.list({
        visibility: { agentId: 'shared-writer', orgId: null, now: new Date() },
        filters: {},
      });
      expect(records).toHaveLength(WORKERS * PER_WORKER);
      const contents = new Set(records.map((r) => r.record.content));
      for (let worker = 0; worker < WORKERS; worker += 1) {
        for (const i of [0, 500, PER_WORKER - 1])
          expect(contents.has(`worker ${worker} record ${i}`)).toBe(true);
      }
      expect(contents.size).toBe(WORKERS * PER_WORKER);
      const verification = await engine.verifyAudit();
      expect([
        verification.ok,
        verification.events,
        verification.chains,
        verification.heads,
      ]).toEqual([
        true,
        WORKERS * PER_WORKER,
        1,
        [
          {
            chain: 'shared-writer',
            seq: WORKERS * PER_WORKER,
            hash: expect.stringMatching(/^[0-9a-f]{64}$/),
          },
        ],
      ]);
      const events = await store.readAudit({ limit: WORKERS * PER_WORKER });
      expect(new Set(events.flatMap((event) => event.recordIds))).toEqual(
        new Set(records.map((r) => r.record.id)),
      );
    } finally {
      await engine.close();
    }
  }, 300_000);
});
