import { createEngine, termFrequencies } from '@mnemo/core';
import { createManualClock, createSequentialIds } from '@mnemo/core/testing';
import { describe, expect, it } from 'vitest';
import { createDuckDBStore } from '../src/index.js';
import { MERGE_FANOUT, runsToMerge } from '../src/postings-runs.js';
import { queryFile } from './raw-file.js';
import { useTempFolder } from './temp-folder.js';

const { file, cleanup } = useTempFolder('mnemo-duckdb-runs-');

function open(path: string, postingsRunSize?: number) {
  const store = createDuckDBStore({ path, postingsRunSize });
  cleanup.push(() => store.close());
  const engine = createEngine({
    store,
    clock: createManualClock('2026-01-01T00:00:00.000Z'),
    ids: createSequentialIds(),
  });
  return { store, engine };
}

const WORDS = ['river', 'stone', 'lamp', 'garden', 'violin', 'harbor', 'maple', 'comet', 'quill'];
/**
 * 120 texts of four to seven words, so most terms recur across records. Their
 * 780 postings need a merged run at a run size of 40 however the sorts fell:
 * fewer than MERGE_FANOUT runs under 40 × MERGE_FANOUT hold fewer than 480.
 */
const TEXTS = Array.from(
  { length: 120 },
  (_, i) =>
    Array.from({ length: 4 + (i % 4) }, (_, k) => WORDS[(i * 5 + k * 7) % WORDS.length]).join(' ') +
    ` note${i}`,
);
const QUERIES = ['river lamp', 'garden violin comet', 'note7 stone', 'maple', 'quill harbor river'];

describe('runsToMerge', () => {
  it('merges the oldest four runs under four times the run size, and never larger ones', () => {
    const runs = (sizes: number[]) => sizes.map((postings, i) => ({ run: i + 1, postings }));
    expect(runsToMerge(runs([100, 120, 90]), 100)).toBeNull();
    expect(runsToMerge(runs([500, 100, 120, 399, 130, 110]), 100)).toEqual([2, 3, 4, 5]);
    expect(runsToMerge(runs([500, 450, 400, 600, 700, 100]), 100)).toBeNull();
    // Four times the run size is no longer small: 399 is, 400 is not.
    expect(runsToMerge(runs([400, 100, 120, 399]), 100)).toBeNull();
    expect(runsToMerge(runs([399, 100, 120, 399]), 100)).toEqual([1, 2, 3, 4]);
    expect(runsToMerge(runs([30, 500, 20, 10, 5]), 100)).toEqual([1, 3, 4, 5]);
  });
});

describe('DuckDB postings sorted by term, in runs', () => {
  it('moves every posting exactly once, keeps each run in term key order and merges runs of a size', async () => {
    const path = file('runs.duckdb');
    const sorted = open(path, 40);
    const unsorted = open(file('unsorted.duckdb'));
    await sorted.engine.init();
    await unsorted.engine.init();
    for (const content of TEXTS) {
      await sorted.engine.as('agent-a').remember({ content });
      await unsorted.engine.as('agent-a').remember({ content });
    }
    for (const query of QUERIES) {
      const hits = async (engine: typeof sorted.engine) =>
        (await engine.as('agent-a').recall({ query, strategy: 'lexical' })).hits.map((hit) => [
          hit.record.id,
          hit.score,
        ]);
      expect(await hits(sorted.engine)).toEqual(await hits(unsorted.engine));
    }
    const forgotten = (await sorted.engine.as('agent-a').recall({ query: 'note7' })).hits[0]
      ?.record;
    expect(forgotten?.content).toBe(TEXTS[7]);
    await sorted.engine.as('agent-a').forget({ ids: [forgotten?.id as string] });
    await sorted.store.close();
    // A sort that follows a commit runs in the background, and a close skips one still queued
    // (a loaded machine leaves more of them queued); init() sorts what is left, and merges.
    const reopened = open(path, 40);
    await reopened.engine.init();
    await reopened.store.close();

    const expected = TEXTS.flatMap((content, i) =>
      i === 7 ? [] : termFrequencies(content).terms.map(({ term, tf }) => `${term}:${tf}`),
    ).sort();
    const stored = await queryFile<{ posting: string }>(
      path,
      `SELECT term || ':' || tf AS posting FROM mnemo_postings
       UNION ALL SELECT term || ':' || tf FROM mnemo_postings_sorted ORDER BY 1`,
    );
    expect(stored.map((row) => row.posting)).toEqual(expected);
    const runs = await queryFile<{ run: number; postings: number }>(
      path,
      'SELECT run, count(*) AS postings FROM mnemo_postings_sorted GROUP BY run ORDER BY run',
    );
    // Fewer than MERGE_FANOUT small runs: the merges caught up, so some run is a merged one.
    const small = runs.filter((r) => r.postings < 40 * MERGE_FANOUT);
    expect(small.length).toBeLessThan(MERGE_FANOUT);
    expect(runs.length - small.length).toBeGreaterThanOrEqual(1);
    const [fresh] = await queryFile<{ n: number }>(
      path,
      'SELECT count(*) AS n FROM mnemo_postings',
    );
    expect(fresh?.n).toBeLessThan(40 + 8);
    const descending = await queryFile<{ n: number }>(
      path,
      `SELECT count(*) AS n FROM (
         SELECT term_key < lag(term_key) OVER (PARTITION BY run ORDER BY rowid) AS down
         FROM mnemo_postings_sorted
       ) WHERE down`,
    );
    expect(descending).toEqual([{ n: 0 }]);
  });

  it('init() sorts the postings of a file written in write order', async () => {
    const path = file('old.duckdb');
    const first = open(path);
    await first.engine.init();
    for (const content of TEXTS.slice(0, 20))
      await first.engine.as('agent-a').remember({ content });
    await first.store.close();
    const [before] = await queryFile<{ n: number }>(
      path,
      'SELECT count(*) AS n FROM mnemo_postings',
    );
    expect(before?.n).toBeGreaterThan(30);

    const second = open(path, 30);
    await second.engine.init();
    await second.store.close();
    expect(await queryFile(path, 'SELECT count(*) AS n FROM mnemo_postings')).toEqual([{ n: 0 }]);
    expect(
      await queryFile(path, 'SELECT run, count(*) AS n FROM mnemo_postings_sorted GROUP BY run'),
    ).toEqual([{ run: 1, n: before?.n }]);
  });

  it('sorts once exactly postingsRunSize postings have committed, after a commit and when opened', async () => {
    const path = file('exact.duckdb');
    const counts = () =>
      queryFile(
        path,
        `SELECT (SELECT count(*) FROM mnemo_postings) AS fresh,
                (SELECT count(*) FROM mnemo_postings_sorted) AS sorted`,
      );
    const write = async (runSize: number, prefix: string, content: string) => {
      const store = createDuckDBStore({ path, postingsRunSize: runSize });
      cleanup.push(() => store.close());
      const engine = createEngine({ store, ids: createSequentialIds(prefix) });
      await engine.init();
      if (content !== '') {
        // Four distinct terms; the first write of a store runs on the file.
        await engine.as('agent-a').remember({ content });
        // A transaction on the file runs after the sort a commit queued (a close skips it).
        await store.transaction((tx) => tx.putGrants([]));
      }
      await store.close();
      return counts();
    };
    expect(await write(4, 'a-', 'river stone lamp garden')).toEqual([{ fresh: 0, sorted: 4 }]);
    expect(await write(5, 'b-', 'violin harbor maple comet')).toEqual([{ fresh: 4, sorted: 4 }]);
    // Opened with a run size of four, it sorts the four left.
    expect(await write(4, 'c-', '')).toEqual([{ fresh: 0, sorted: 8 }]);
  });

  it('forgets the sorted postings of more records than it names by key (1,030)', async () => {
    const path = file('bulk.duckdb');
    const first = open(path, 100);
    await first.engine.init();
    await first.engine.as('agent-a').rememberMany(
      Array.from({ length: 1030 }, (_, i) => ({
        content: `batch item${i} ${WORDS[i % 9]}`,
        tags: ['bulk'],
      })),
    );
    await first.engine
      .as('agent-a')
      .rememberMany(TEXTS.slice(0, 5).map((content) => ({ content })));
    await first.store.close();
    // init() sorts what the file holds into a run, whatever the machine's speed (a sort that
    // follows a commit runs in the background, and a close does not wait for one queued).
    const { store, engine } = open(path, 100);
    await engine.init();
    const agent = engine.as('agent-a');
    const { forgotten } = await agent.forget({ filters: { tagsAll: ['bulk'] } });
    expect(forgotten).toHaveLength(1030);
    await store.close();
    const left = await queryFile<{ n: number }>(
      path,
      `SELECT count(*) AS n FROM (SELECT term FROM mnemo_postings
         UNION ALL SELECT term FROM mnemo_postings_sorted) WHERE term = 'batch'`,
    );
    expect(left).toEqual([{ n: 0 }]);
    const kept = await queryFile<{ n: number }>(
      path,
      'SELECT count(*) AS n FROM mnemo_postings_sorted',
    );
    expect(kept[0]?.n).toBeGreaterThan(0);
  });

  it('rejects a run size that is not a positive integer', () => {
    for (const postingsRunSize of [0, -1, 1.5, Number.NaN]) {
      expect(() => createDuckDBStore({ path: ':memory:', postingsRunSize })).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', details: { field: 'postingsRunSize' } }),
      );
    }
  });
});
