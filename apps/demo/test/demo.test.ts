import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '@mnemo/core';
import { recallPlan } from '@mnemo/experience';
import { createDuckDBStore, JOURNAL_SUFFIX } from '@mnemo/store-duckdb';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type QuestionOutcome,
  RETRIEVAL_STEP,
  type ReplayOutcome,
  type RetrievalOutcome,
  runAgentLoop,
} from '../src/agent-loop.js';
import { chunkCorpus, loadCorpusFolder, loadDefaultCorpus } from '../src/corpus.js';
import { openEngine, resetDatabaseFile } from '../src/database.js';
import { runDemo } from '../src/demo.js';
import { formatOutcome } from '../src/format-report.js';
import { ingestChunks } from '../src/ingest.js';
import { type Progress, silentProgress } from '../src/progress.js';
import { parseQuestions } from '../src/questions.js';
import { buildReport } from '../src/report.js';
import { UsageError } from '../src/usage-error.js';
import {
  corpus,
  fixtures,
  freshReport,
  gardenOptions,
  keptReport,
  queries,
  tickingClock,
} from './garden-fixture.js';

describe('loadCorpusFolder', () => {
  it('reads .md and .txt files recursively, sorted, skipping CHANGELOG.md and other extensions', async () => {
    const files = await loadCorpusFolder(corpus);
    expect(files.map((file) => file.path)).toEqual(['guide.md', 'notes/tools.txt']);
    expect(chunkCorpus(files).map((chunk) => [chunk.source, chunk.heading])).toEqual([
      ['guide.md', 'Garden guide'],
      ['guide.md', 'Garden guide > Watering'],
      ['guide.md', 'Garden guide > Pruning'],
      ['notes/tools.txt', ''],
    ]);
  });

  it('rejects a missing folder, a file, and a folder without documents', async () => {
    await expect(loadCorpusFolder(join(fixtures, 'missing'))).rejects.toThrow(
      `--corpus: no such folder: ${join(fixtures, 'missing')}`,
    );
    await expect(loadCorpusFolder(queries)).rejects.toThrow(`--corpus: not a folder: ${queries}`);
    const empty = mkdtempSync(join(tmpdir(), 'mnemo-demo-empty-'));
    try {
      await expect(loadCorpusFolder(empty)).rejects.toThrow(
        `--corpus: no .md or .txt files in ${empty}`,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('loadCorpusFolder, in folders it skips', () => {
  it('skips hidden folders and node_modules', async () => {
    const root = mkdtempSync(join(tmpdir(), 'mnemo-demo-corpus-'));
    try {
      for (const path of ['a.md', '.hidden/b.md', 'node_modules/pkg/README.md', 'sub/c.txt']) {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), `text of ${path}`);
      }
      expect((await loadCorpusFolder(root)).map((file) => file.path)).toEqual([
        'a.md',
        'sub/c.txt',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('loadDefaultCorpus', () => {
  it('reads the shipped documents and the READMEs that exist, with paths from the repository root', async () => {
    const paths = (await loadDefaultCorpus()).map((file) => file.path);
    expect(paths.filter((path) => path.startsWith('apps/demo/'))).toEqual([
      'apps/demo/README.md',
      'apps/demo/corpus/01-overview.md',
      'apps/demo/corpus/02-records-and-scopes.md',
      'apps/demo/corpus/03-recall.md',
      'apps/demo/corpus/04-forgetting.md',
      'apps/demo/corpus/05-audit-log.md',
      'apps/demo/corpus/06-experience-memory.md',
      'apps/demo/corpus/07-stores.md',
      'apps/demo/corpus/08-errors-and-testing.md',
      'apps/demo/corpus/09-release-codenames.md',
    ]);
    expect(
      paths.every((path) =>
        /^(README\.md|packages\/[^/]+\/README\.md|apps\/demo\/.*\.md)$/.test(path),
      ),
    ).toBe(true);
    // The root README and every package README there is.
    const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
    const packageReadmes = readdirSync(join(repoRoot, 'packages'))
      .filter((name) => existsSync(join(repoRoot, 'packages', name, 'README.md')))
      .map((name) => `packages/${name}/README.md`)
      .sort();
    expect(packageReadmes.length).toBeGreaterThan(0);
    expect(paths.filter((path) => !path.startsWith('apps/demo/'))).toEqual([
      'README.md',
      ...packageReadmes,
    ]);
  });
});

describe('ingestChunks', () => {
  it('remembers each chunk as a private semantic record tagged doc, ten chunks per batch', async () => {
    const engine = await openEngine({ kind: 'duckdb', path: ':memory:' });
    try {
      const handle = engine.as('reader');
      const chunks = Array.from({ length: 23 }, (_, i) => ({
        source: `notes/${i}.txt`,
        heading: i % 2 === 0 ? '' : 'Odd',
        text: `Chunk ${i} about topic${i}`,
      }));
      const lines: string[] = [];
      const progress: Progress = {
        update: (line) => lines.push(`update: ${line}`),
        line: (line) => lines.push(`line: ${line}`),
      };
      expect(await ingestChunks(handle, chunks, progress)).toEqual({
        chunks: 23,
        deduplicated: 0,
      });
      expect(lines).toEqual([
        'update: ingesting 23 chunks: 10/23',
        'update: ingesting 23 chunks: 20/23',
        'update: ingesting 23 chunks: 23/23',
        'line: ingested 23 chunks (0 already stored)',
      ]);
      const { hits } = await handle.recall({ query: 'topic7', strategy: 'lexical', limit: 1 });
      expect(hits.map((hit) => hit.record)).toEqual([
        expect.objectContaining({
          content: 'Chunk 7 about topic7',
          memoryType: 'semantic',
          scope: 'private',
          tags: ['doc'],
          metadata: { source: 'notes/7.txt', heading: 'Odd' },
        }),
      ]);
    } finally {
      await engine.close();
    }
  });
});

describe('runAgentLoop', () => {
  it('replays the plans that earlier questions cached, and caches only good outcomes', async () => {
    const engine = await openEngine({ kind: 'duckdb', path: ':memory:' });
    try {
      const handle = engine.as('gardener');
      const chunks = chunkCorpus(await loadCorpusFolder(corpus));
      expect(await ingestChunks(handle, chunks, silentProgress)).toEqual({
        chunks: 4,
        deduplicated: 0,
      });
      const seen: number[] = [];
      const outcomes = await runAgentLoop(handle, parseQuestions(readFileSync(queries, 'utf8')), {
        similarityThreshold: 0.7,
        onOutcome: (_, index, total) => seen.push(index * 10 + total),
      });
      expect(seen).toEqual([6, 16, 26, 36, 46, 56]);
      expect(outcomes.map((outcome) => [outcome.path, outcome.planId !== null])).toEqual([
        ['retrieval', true],
        ['replay', true],
        ['retrieval', true],
        ['retrieval', false],
        ['replay', true],
        ['retrieval', true],
      ]);
      const at = (index: number): QuestionOutcome => {
        const outcome = outcomes[index];
        if (outcome === undefined) throw new Error(`no outcome ${index}`);
        return outcome;
      };
      const replayAt = (index: number): ReplayOutcome => {
        const outcome = at(index);
        if (outcome.path !== 'replay') throw new Error(`question ${index + 1} was not replayed`);
        return outcome;
      };
      const [first, second, third, fourth, fifth, sixth] = [
        at(0),
        replayAt(1),
        at(2),
        at(3),
        replayAt(4),
        at(5),
      ];
      expect(second.planId).toBe(first.planId);
      expect(second.chunkIds).toEqual(first.chunkIds);
      expect(fifth.planId).toBe(third.planId);
      expect(fifth.chunkIds).toEqual(third.chunkIds);
      expect([second.planQuery, second.similarity, second.wrong]).toEqual([
        'How often should tomatoes be watered?',
        5 / 6,
        false,
      ]);
      expect([fifth.planQuery, fifth.similarity, fifth.wrong]).toEqual([
        'When should roses be pruned?',
        4 / 5,
        false,
      ]);
      expect(outcomes.map((outcome) => outcome.score)).toEqual([1, 1, 1, 0, 1, 1]);
      expect(fourth.chunkIds).toEqual([]);

      // The best chunk of each retrieval is the section that answers it.
      const headings = async (outcome: QuestionOutcome) =>
        Promise.all(outcome.chunkIds.map(async (id) => (await handle.get(id)).metadata.heading));
      expect((await headings(first))[0]).toBe('Garden guide > Watering');
      expect((await headings(third))[0]).toBe('Garden guide > Pruning');
      expect((await headings(sixth))[0]).toBe('');

      // What was cached is an ordinary plan: the step and the chunk ids.
      expect(RETRIEVAL_STEP).toBe('recall:lexical:limit=5');
      const plan = await handle.get(first.planId as string);
      expect(plan.metadata.experience_plan).toMatchObject({
        steps: [RETRIEVAL_STEP],
        chunk_ids: first.chunkIds,
      });
    } finally {
      await engine.close();
    }
  });
});

describe('the plan lifecycle in the agent loop', () => {
  it('reports every replay; a poorly rated replay retires its plan and the next paraphrase runs retrieval', async () => {
    const engine = await openEngine({ kind: 'duckdb', path: ':memory:' });
    try {
      const handle = engine.as('agent');
      await ingestChunks(handle, chunkCorpus(await loadDefaultCorpus()), silentProgress);
      const outcomes = await runAgentLoop(
        handle,
        [
          // Two of the four words are in the corpus (09-release-codenames.md only): cached at 0.5.
          'Heron and Lighthouse: which mascots and banners?',
          // One more unknown word: similarity 6/7, the replay scores 2/5.
          'Heron and Lighthouse: which mascots, banners and flags?',
          'Mascots, banners and flags: which for Heron and Lighthouse?',
        ],
        { similarityThreshold: 0.7 },
      );
      const [first, second, third] = outcomes as [QuestionOutcome, ReplayOutcome, QuestionOutcome];
      expect([first.path, first.score, first.planId !== null]).toEqual(['retrieval', 0.5, true]);
      expect([second.path, second.planId, second.wrong, second.retired]).toEqual([
        'replay',
        first.planId,
        true,
        true,
      ]);
      // 0.5 · 0.4 + 0.5 · 0.5: below the success threshold.
      expect([second.score, second.runningOutcome]).toEqual([0.4, 0.45]);
      // Retrieval finds the added word in the demo README's Run it examples: 0.5, cached again.
      expect([third.path, third.retiredSkipped, third.score, third.planId !== null]).toEqual([
        'retrieval',
        1,
        0.5,
        true,
      ]);
      const events = await engine.store.readAudit({ limit: 1000 });
      expect(
        events.filter((e) => e.op === 'plan_outcome').map((e) => [e.recordIds, e.details]),
      ).toEqual([
        [[first.planId], { outcomeScore: 0.4, runningOutcome: 0.45, replays: 1, failures: 1 }],
      ]);
    } finally {
      await engine.close();
    }
  });
});

describe('a miss whose plan is cached already', () => {
  it('is not counted as cached when rememberPlan returns the identical, retired plan', async () => {
    const engine = await openEngine({ kind: 'duckdb', path: ':memory:' });
    try {
      const handle = engine.as('agent');
      await ingestChunks(handle, chunkCorpus(await loadDefaultCorpus()), silentProgress);
      const question = 'Heron and Lighthouse: which mascots and banners?';
      const outcomes = await runAgentLoop(
        handle,
        // The paraphrase's poor replay retires the first question's plan; the first question
        // then misses, and its retrieval gives the very plan that is cached and retired.
        [question, 'Heron and Lighthouse: which mascots, banners and flags?', question],
        { similarityThreshold: 0.7 },
      );
      const [first, second, third] = outcomes as [
        RetrievalOutcome,
        ReplayOutcome,
        RetrievalOutcome,
      ];
      expect([first.path, first.deduplicated, second.retired]).toEqual(['retrieval', false, true]);
      expect([third.path, third.retiredSkipped, third.planId, third.deduplicated]).toEqual([
        'retrieval',
        1,
        first.planId,
        true,
      ]);
      expect(formatOutcome(third, 2, 3)).toMatch(
        /^\[3\/3\] miss \(1 retired plan skipped\), retrieval, not cached \(identical plan exists\) score 0\.50 /,
      );
      const report = buildReport({
        corpus: { source: 'default', files: 1, chunks: 1, deduplicatedChunks: 0 },
        database: { store: 'duckdb', path: ':memory:', kept: false },
        agent: 'agent',
        similarityThreshold: 0.7,
        outcomes,
        audit: await engine.verifyAudit(),
      });
      expect([report.plansCached, report.plansDeduplicated, report.plansNotCached]).toEqual([
        1, 1, 0,
      ]);
      // One plan was written, and it is still retired: the third question cached nothing.
      expect((await recallPlan(handle, { query: question })).plan).toBeNull();
    } finally {
      await engine.close();
    }
  });
});

describe('replays at the edges', () => {
  it('counts a replay scoring exactly the success threshold as right, and skips a plan whose chunk is gone', async () => {
    const engine = await openEngine({ kind: 'duckdb', path: ':memory:' });
    try {
      const handle = engine.as('agent');
      await ingestChunks(
        handle,
        [
          { source: 'a.md', heading: '', text: 'Alpha beta gamma.' },
          { source: 'b.md', heading: '', text: 'Nothing in common here.' },
        ],
        silentProgress,
      );
      const [cached, replayed] = (await runAgentLoop(
        handle,
        // Similarity 3/6; the replayed chunk covers 3 of the 6 terms: (3/6 + 3/6) / 2.
        ['Alpha beta gamma?', 'Alpha beta gamma omega epsilon zeta?'],
        { similarityThreshold: 0.5 },
      )) as [QuestionOutcome, ReplayOutcome];
      expect([cached.path, cached.score, cached.chunkIds.length]).toEqual(['retrieval', 1, 1]);
      expect([replayed.path, replayed.similarity, replayed.score]).toEqual(['replay', 0.5, 0.5]);
      expect([replayed.wrong, replayed.runningOutcome, replayed.retired]).toEqual([
        false,
        0.75,
        false,
      ]);

      await handle.forget({ ids: cached.chunkIds });
      const [again] = await runAgentLoop(handle, ['Gamma, beta, alpha?'], {
        similarityThreshold: 0.5,
      });
      expect(again).toMatchObject({
        path: 'retrieval',
        staleSkipped: 1,
        retiredSkipped: 0,
        planId: null,
      });
    } finally {
      await engine.close();
    }
  });
});

describe('resetDatabaseFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-demo-reset-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('deletes what a stopped run leaves: the .wal and the journal, even without the file', async () => {
    const db = join(dir, 'leftovers.duckdb');
    writeFileSync(`${db}.wal`, 'left by a stopped run');
    writeFileSync(`${db}${JOURNAL_SUFFIX}`, 'left by a stopped run');
    await resetDatabaseFile(db);
    expect([existsSync(`${db}.wal`), existsSync(`${db}${JOURNAL_SUFFIX}`)]).toEqual([false, false]);
  });

  it('refuses a database another store has open, in another process or this one, and deletes nothing', async () => {
    const db = join(dir, 'in-use.duckdb');
    const demoDir = join(dirname(fileURLToPath(import.meta.url)), '..');
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        // The timer holds the store: once collected, DuckDB closes the file and lets go of its lock.
        `import { createDuckDBStore } from '@mnemo/store-duckdb';
         const store = createDuckDBStore({ path: process.argv[1] });
         await store.init();
         process.stdout.write('ready\\n');
         setInterval(() => store, 1000);`,
        db,
      ],
      { cwd: demoDir, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((done) => holder.once('exit', done));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on(
          'data',
          (chunk: Buffer) => chunk.toString().includes('ready') && resolve(),
        );
        exited.then((code) => reject(new Error(`holder exited with ${code}`)));
      });
      const files = () => readdirSync(dir).filter((name) => name.startsWith('in-use.duckdb'));
      const held = files();
      await expect(resetDatabaseFile(db)).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        details: { reason: 'file_in_use' },
      });
      expect(files()).toEqual(held);
    } finally {
      holder.kill('SIGKILL');
      await exited;
    }
    const open = await openEngine({ kind: 'duckdb', path: db });
    try {
      await expect(resetDatabaseFile(db)).rejects.toMatchObject({
        details: { reason: 'file_in_use' },
      });
      expect(existsSync(db)).toBe(true);
    } finally {
      await open.close();
    }
    await resetDatabaseFile(db);
    expect(existsSync(db)).toBe(false);
  });

  it('deletes an empty file, and refuses a folder', async () => {
    const empty = join(dir, 'empty.duckdb');
    writeFileSync(empty, '');
    await resetDatabaseFile(empty);
    expect(existsSync(empty)).toBe(false);

    const folder = join(dir, 'folder.duckdb');
    mkdirSync(folder);
    const reset = resetDatabaseFile(folder);
    await expect(reset).rejects.toThrow(UsageError);
    await expect(reset).rejects.toThrow(
      `the database ${folder} exists and is not a DuckDB database; refusing to overwrite it`,
    );
    expect(existsSync(folder)).toBe(true);
  });

  // `--db /dev/null` passed the check as an empty file, and a run as root deleted the device.
  it.skipIf(process.platform === 'win32')(
    'refuses anything that is not a regular file, without opening it (a FIFO would block)',
    async () => {
      const fifo = join(dir, 'pipe.duckdb');
      execFileSync('mkfifo', [fifo]);
      const reset = resetDatabaseFile(fifo);
      await expect(reset).rejects.toThrow(UsageError);
      await expect(reset).rejects.toThrow(
        `the database ${fifo} exists and is not a DuckDB database; refusing to overwrite it`,
      );
      expect(lstatSync(fifo).isFIFO()).toBe(true);
    },
    2_000,
  );
});

describe('runDemo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mnemo-demo-run-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const options = gardenOptions;
  const duckdb = (path: string) => ({ kind: 'duckdb' as const, path });

  it('runs the fixture in memory', async () => {
    const report = await runDemo({ ...options, store: duckdb(':memory:'), now: tickingClock() });
    expect(report).toEqual(freshReport({ store: 'duckdb', path: ':memory:', kept: false }));
  });

  it('reports an in-memory run as fresh even with keep: there is no earlier run to reuse', async () => {
    const report = await runDemo({
      ...options,
      store: duckdb(':memory:'),
      keep: true,
      now: tickingClock(),
    });
    expect(report).toEqual(freshReport({ store: 'duckdb', path: ':memory:', kept: false }));
  });

  it('runs the fixture on a DuckDB file, fresh each time unless kept', async () => {
    const db = join(dir, 'garden.duckdb');
    const fresh = freshReport({ store: 'duckdb', path: db, kept: false });
    expect(await runDemo({ ...options, store: duckdb(db), now: tickingClock() })).toEqual(fresh);
    expect(existsSync(db)).toBe(true);
    // The second fresh run deletes the first's file.
    expect(await runDemo({ ...options, store: duckdb(db), now: tickingClock() })).toEqual(fresh);

    const kept = await runDemo({ ...options, store: duckdb(db), keep: true, now: tickingClock() });
    expect(kept).toMatchObject(keptReport({ store: 'duckdb', path: db, kept: true }));
  });

  it('starts fresh after a run stopped with writes still in the journal', async () => {
    const db = join(dir, 'stopped.duckdb');
    const journal = `${db}${JOURNAL_SUFFIX}`;
    // A journal as a stopped run leaves it: acknowledged writes not yet in the file.
    const store = createDuckDBStore({ path: db });
    const engine = createEngine({ store });
    await engine.init();
    await engine.as('demo-agent').remember({ content: 'written on the file' });
    await engine.as('demo-agent').remember({ content: 'acknowledged from the journal' });
    const left = readFileSync(journal);
    expect(left.length).toBeGreaterThan(0);
    await engine.close();
    writeFileSync(journal, left);

    const fresh = freshReport({ store: 'duckdb', path: db, kept: false });
    expect(await runDemo({ ...options, store: duckdb(db), now: tickingClock() })).toEqual(fresh);
  });

  it('reports a kept database that did not exist as fresh', async () => {
    const db = join(dir, 'never-run.duckdb');
    const report = await runDemo({
      ...options,
      store: duckdb(db),
      keep: true,
      now: tickingClock(),
    });
    expect(report).toEqual(freshReport({ store: 'duckdb', path: db, kept: false }));
  });

  it('refuses to delete, or to keep, a file that is not a DuckDB database', async () => {
    const precious = join(dir, 'notes.md');
    writeFileSync(precious, '# my notes\n');
    for (const keep of [false, true]) {
      const run = runDemo({ ...options, store: duckdb(precious), keep });
      await expect(run).rejects.toThrow(UsageError);
      await expect(run).rejects.toThrow(
        `the database ${precious} exists and is not a DuckDB database; refusing to ${keep ? 'open' : 'overwrite'} it`,
      );
    }
    expect(readFileSync(precious, 'utf8')).toBe('# my notes\n');
  });

  it('rejects a missing queries file before touching the database', async () => {
    const db = join(dir, 'untouched-by-queries.duckdb');
    const queriesFile = join(dir, 'no-such-queries.txt');
    const run = runDemo({ ...options, queries: queriesFile, store: duckdb(db) });
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow(`--queries: cannot read ${queriesFile}: no such file`);
    expect(existsSync(db)).toBe(false);
  });

  it('rejects a corpus without text before touching the database', async () => {
    const blank = join(dir, 'blank');
    const db = join(dir, 'untouched.duckdb');
    await import('node:fs/promises').then((fs) => fs.mkdir(blank));
    writeFileSync(join(blank, 'empty.md'), '\n\n# \n');
    const run = runDemo({ ...options, corpus: blank, store: duckdb(db) });
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow(`the corpus (${blank}) has no text to ingest`);
    expect(existsSync(db)).toBe(false);
  });
});
