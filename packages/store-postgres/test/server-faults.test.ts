import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine, MnemoError } from '@mnemo/core';
import { type Ack, checkAcknowledged, tally } from '@mnemo/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { type DedicatedServer, postgresBinDir, startDedicatedServer } from './dedicated-server.js';

// Stops and restarts a server of the test's own (the shared one serves the other files).
// Two outages by default (a clean stop, then a crash); MNEMO_RELIABILITY_FULL=1 runs 6.
const CYCLES = process.env.MNEMO_RELIABILITY_FULL === '1' ? 6 : 2;
const CONNECTION_TIMEOUT_MS = 2_000;
/** No call may take longer than this to fail while the server is down. */
const FAILURE_BOUND_MS = CONNECTION_TIMEOUT_MS + 3_000;
const bin = postgresBinDir();
if (bin === null && process.env.CI) {
  throw new Error('no PostgreSQL server binaries: CI must install them (see .ci/postgres.sh)');
}

interface Failure {
  phase: string;
  code: string;
  ms: number;
}

describe.skipIf(bin === null)('server faults', () => {
  let server: DedicatedServer;
  beforeAll(async () => {
    server = await startDedicatedServer(bin as string);
  }, 120_000);
  afterAll(() => server?.destroy());

  it(`fails calls during ${CYCLES} outages with STORE_UNAVAILABLE in bounded time, recovers without a restart, loses nothing acknowledged`, async () => {
    const store = createPostgresStore({
      connectionString: server.url,
      schema: 'faults',
      connectionTimeoutMs: CONNECTION_TIMEOUT_MS,
      statementTimeoutMs: 5_000,
      maxConnections: 4,
    });
    const engine = createEngine({ store });
    await engine.init();
    const acked: (Ack & { phase: string })[] = [];
    const failures: Failure[] = [];
    let recalls = 0;
    let phase = 'up';
    let running = true;
    const attempt = async (call: () => Promise<void>) => {
      const started = Date.now();
      try {
        await call();
      } catch (error) {
        failures.push({
          phase,
          code: MnemoError.isInstance(error) ? error.code : String(error),
          ms: Date.now() - started,
        });
        await sleep(25);
      }
    };
    const writer = async (w: number) => {
      const agentId = `agent-${w}`;
      for (let n = 0; running; n += 1) {
        const content = `fault writer ${w} record ${n}`;
        const at = phase;
        await attempt(async () => {
          const { id, contentHash } = await engine.as(agentId).remember({ content });
          acked.push({ agentId, id, contentHash, content, phase: at });
        });
      }
    };
    const reader = async () => {
      while (running) {
        await attempt(async () => {
          await engine.as('agent-0').recall({ query: 'fault record' });
          recalls += 1;
        });
      }
    };
    const workload = Promise.all([0, 1, 2].map(writer).concat(reader()));

    const phases: { cycle: number; down: number; after: number }[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle += 1) {
      await sleep(700);
      phase = `down ${cycle}`;
      await server.stop(cycle % 2 === 0 ? 'fast' : 'immediate');
      await sleep(1_500);
      await server.start();
      phase = `up ${cycle}`;
      // Recovered when writes are acknowledged again, with the same store and pool.
      const deadline = Date.now() + 30_000;
      while (!acked.some((ack) => ack.phase === phase) && Date.now() < deadline) await sleep(50);
      phases.push({
        cycle,
        down: failures.filter((f) => f.phase === `down ${cycle}`).length,
        after: acked.filter((ack) => ack.phase === phase).length,
      });
    }
    await sleep(500);
    running = false;
    await workload;

    const { checked, lost } = await checkAcknowledged(engine, acked);
    const audit = await engine.verifyAudit();
    const records = await engine.verifyRecords();
    await store.close();
    tally({ serverFaults: CYCLES, acknowledgedWritesChecked: checked, lostWrites: lost.length });

    expect({
      codes: [...new Set(failures.map((f) => f.code))],
      slowest: failures.every((f) => f.ms <= FAILURE_BOUND_MS),
      outages: phases.map(({ cycle, down, after }) => ({
        cycle,
        failedWhileDown: down > 0,
        writesAfter: after > 0,
      })),
      lost,
      audit: audit.problems,
      records: records.problems,
    }).toEqual({
      codes: ['STORE_UNAVAILABLE'],
      slowest: true,
      outages: phases.map(({ cycle }) => ({ cycle, failedWhileDown: true, writesAfter: true })),
      lost: [],
      audit: [],
      records: [],
    });
    expect(recalls).toBeGreaterThan(0);
  }, 300_000);

  it('refuses a standby in init(), createSchema or not, with STORE_UNAVAILABLE', async () => {
    const primary = createEngine({
      store: createPostgresStore({ connectionString: server.url, schema: 'replicated' }),
    });
    await primary.init();
    await primary.as('agent-a').remember({ content: 'written on the primary' });
    await primary.close();
    const standby = await server.startStandby();
    for (const createSchema of [true, false]) {
      const store = createPostgresStore({
        connectionString: standby.url,
        schema: 'replicated',
        createSchema,
      });
      const error = await store.init().catch((e: unknown) => e);
      await store.close();
      expect(error).toMatchObject({
        code: 'STORE_UNAVAILABLE',
        message:
          'PostgreSQL: the server is a standby (in recovery), which takes no writes: connect to the primary',
      });
    }
  }, 120_000);
});
