import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../src/dispatch.js';
import { parseReplayArgs, replayCommand } from '../src/replay/command.js';
import {
  type QueryOutcome,
  RECOMMENDATION_RULE,
  recommend,
  THRESHOLDS,
  thresholdRow,
} from '../src/replay/metrics.js';
import { memoryOutput } from '../src/shared/output.js';

const fixture = fileURLToPath(new URL('fixtures/clinc-tiny.json', import.meta.url));
const PG_URL = process.env.MNEMO_TEST_PG_URL;

async function run(...args: string[]) {
  const output = memoryOutput();
  const code = await replayCommand(args, output);
  const last = output.stdout.at(-1);
  return {
    code,
    stderr: output.stderr,
    // biome-ignore lint/suspicious/noExplicitAny: the JSON line, checked field by field
    json: (code === 0 && last !== undefined ? JSON.parse(last) : undefined) as any,
  };
}

describe('replay metrics', () => {
  it('has the thresholds 0.30 … 1.00 as exact k/20 doubles', () => {
    expect(THRESHOLDS).toHaveLength(15);
    expect(THRESHOLDS[0]).toBe(0.3);
    expect(THRESHOLDS[8]).toBe(0.7);
    expect(THRESHOLDS.at(-1)).toBe(1);
  });

  it('scores replays, correct replays, precision and out-of-scope false hits', () => {
    const outcomes: QueryOutcome[] = [
      { label: 'a', similarity: 1, planLabel: 'a' },
      { label: 'a', similarity: 0.7, planLabel: 'b' },
      { label: 'b', similarity: 0.5, planLabel: 'b' },
      { label: 'c', similarity: null, planLabel: null },
      { label: null, similarity: 0.7, planLabel: 'a' },
    ];
    expect(thresholdRow(outcomes, 0.7)).toEqual({
      threshold: 0.7,
      replays: 3,
      correct: 1,
      oosFalseHits: 1,
      replayRate: 3 / 5,
      correctRate: 1 / 4,
      precision: 1 / 3,
      oosFalseHitRate: 1,
    });
    expect(thresholdRow(outcomes, 0.5).correct).toBe(2);
    expect(thresholdRow([{ label: 'a', similarity: null, planLabel: null }], 0.3)).toMatchObject({
      precision: null,
      oosFalseHitRate: null,
    });
  });

  it('recommends the lowest threshold with precision ≥ 0.95, or none', () => {
    const rows = [0.3, 0.5, 0.7, 0.9].map((threshold, i) => ({
      ...thresholdRow([], threshold),
      precision: [0.9, 0.95, 0.99, null][i] as number | null,
    }));
    expect(recommend(rows)?.threshold).toBe(0.5);
    expect(recommend(rows.slice(0, 1))).toBeNull();
    expect(RECOMMENDATION_RULE).toContain('0.95');
  });
});

describe('bench replay: arguments', () => {
  it('parses --data, --signature, --store, --sample', () => {
    expect(parseReplayArgs(['--data', 'x.json'])).toEqual({
      help: false,
      dataPath: 'x.json',
      signature: 'default',
      store: { kind: 'duckdb' },
      sample: 1,
    });
    expect(
      parseReplayArgs(['--', '--data', 'x.json', '--signature', 'enriched', '--sample', '25']),
    ).toMatchObject({ signature: 'enriched', sample: 25 });
    expect(parseReplayArgs(['-h'])).toEqual({ help: true });
  });

  it('exits 2 on bad flags and unusable files', async () => {
    const bad = join(tmpdir(), `mnemo-replay-bad-${process.pid}.json`);
    await writeFile(bad, JSON.stringify({ train: [['hello', 'greeting']], test: [['hi']] }));
    try {
      for (const args of [
        [],
        ['--data', fixture, '--signature', 'fancy'],
        ['--data', fixture, '--sample', '0'],
        ['--data', fixture, '--store', 'postgres'],
        ['--data', '/nonexistent/clinc.json'],
        ['--data', bad],
      ]) {
        const { code, stderr } = await run(...args);
        expect([args, code]).toEqual([args, 2]);
        expect(stderr.at(-1)).toMatch(/^bench replay: /);
      }
    } finally {
      await rm(bad, { force: true });
    }
  });

  it('exits 2 for a data file that is not there, saying where to get the data', async () => {
    const { code, stderr } = await run('--data', '/nonexistent/clinc.json');
    expect(code).toBe(2);
    expect(stderr).toEqual([
      'bench replay: --data: cannot read /nonexistent/clinc.json: no such file; get CLINC150 from https://github.com/clinc/oos-eval (data/data_full.json, CC BY 3.0) and pass its path with --data (see --help)',
    ]);
  });

  it('is listed by the dispatcher', async () => {
    const output = memoryOutput();
    expect(await main(['--help'], output)).toBe(0);
    expect(output.stdout.join('\n')).toContain('replay');
  });
});

const STORE_ARGS: string[][] = [[]];
if (PG_URL !== undefined) STORE_ARGS.push(['--store', 'postgres', '--pg-url', PG_URL]);

describe.each(STORE_ARGS)('bench replay on the tiny CLINC file %s', (...storeArgs) => {
  it('default signature: the figures of a plain bag of words', async () => {
    const { code, json } = await run('--data', fixture, ...storeArgs);
    expect(code).toBe(0);
    expect(json).toMatchObject({
      bench: 'replay',
      signature: 'default',
      queries: 7,
      inScopeQueries: 5,
      oosQueries: 2,
      // The file repeats one train line: one plan.
      plans: { train: 7, stored: 6, deduplicated: 1, emptySignature: 0 },
      exactness: { checked: 7, mismatches: 0, sample: 1 },
    });
    expect(json.rows).toHaveLength(15);
    // At 0.7: the transfer (5/6) and the balance (1) replay correctly; the
    // negated "do not cancel …" replays the cancellation (3/4), wrongly.
    expect(json.rows[8]).toEqual({
      threshold: 0.7,
      replays: 3,
      correct: 2,
      oosFalseHits: 0,
      replayRate: 0.4286,
      correctRate: 0.4,
      precision: 0.6667,
      oosFalseHitRate: 0,
    });
    expect(json.recommended).toMatchObject({ rule: RECOMMENDATION_RULE, threshold: 0.8 });
    expect(json.baseline.atDefaultThreshold).toEqual(json.rows[8]);
  });

  it('enriched signature: slots match, negation does not', async () => {
    const { code, json, stderr } = await run(
      '--data',
      fixture,
      '--signature',
      'enriched',
      ...storeArgs,
    );
    expect(code).toBe(0);
    expect(stderr.join('\n')).toContain('← recommended');
    expect(json.exactness).toEqual({ checked: 7, mismatches: 0, sample: 1 });
    // Transfer (a #num slot), alarm (a #time slot) and balance replay; the
    // negated query does not; "weather … on mars" shares 2 of 4 tokens.
    expect(json.rows[8]).toEqual({
      threshold: 0.7,
      replays: 3,
      correct: 3,
      oosFalseHits: 0,
      replayRate: 0.4286,
      correctRate: 0.6,
      precision: 1,
      oosFalseHitRate: 0,
    });
    expect(json.rows[4]).toMatchObject({ threshold: 0.5, replays: 4, oosFalseHits: 1 });
    expect(json.recommended).toMatchObject({ threshold: 0.55, correctRate: 0.6, precision: 1 });
    expect(json.vsBaseline.correctRateRecommendedVsBaselineAtDefault).toBe(1.5);
    expect(json.data).toMatchObject({ train: 7, test: 5, oosTest: 2 });
  });

  it('--sample asks every N-th query and still scores all of them', async () => {
    const { code, json } = await run('--data', fixture, '--sample', '3', ...storeArgs);
    expect(code).toBe(0);
    expect(json.exactness).toEqual({ checked: 3, mismatches: 0, sample: 3 });
    expect(json.rows[8].replays).toBe(3);
  });
});
