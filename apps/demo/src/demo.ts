import { resolve } from 'node:path';
import { type AgentLoopOptions, runAgentLoop } from './agent-loop.js';
import type { Chunk } from './chunk.js';
import { chunkCorpus, loadCorpusFolder, loadDefaultCorpus } from './corpus.js';
import { checkKeptStore, IN_MEMORY, openEngine, resetStore } from './database.js';
import { formatOutcome, plural } from './format-report.js';
import { ingestChunks } from './ingest.js';
import { DEMO_PATHS } from './paths.js';
import { type Progress, silentProgress } from './progress.js';
import { loadQuestions } from './questions.js';
import { buildReport, type DemoReport, type ReportDatabase } from './report.js';
import { describeStore, maskUrl, type StoreSpec } from './store-spec.js';
import { UsageError } from './usage-error.js';

export interface DemoOptions {
  /** A folder of .md/.txt files, or null for the default corpus. */
  corpus: string | null;
  /** A queries file, or null for the shipped queries.txt. */
  queries: string | null;
  /** A DuckDB file (relative to the cwd) or ':memory:', or a PostgreSQL URL and schema. */
  store: StoreSpec;
  /** Reuse the database (DuckDB file, PostgreSQL schema) instead of deleting it first. */
  keep: boolean;
  threshold: number;
  agent: string;
  /** Default: silent. */
  progress?: Progress;
  /** Clock for latencies; default `performance.now`. */
  now?: AgentLoopOptions['now'];
}

/**
 * The whole demo: load and chunk the corpus, read the questions (both before
 * touching the database, so bad input changes nothing), open a fresh database
 * (delete the DuckDB file, or drop and recreate the PostgreSQL schema),
 * ingest, run the agent loop, verify the audit chains, close.
 */
export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const progress = options.progress ?? silentProgress;
  const files =
    options.corpus === null ? await loadDefaultCorpus() : await loadCorpusFolder(options.corpus);
  const chunks: Chunk[] = chunkCorpus(files);
  if (chunks.length === 0) {
    throw new UsageError(`the corpus (${options.corpus ?? 'default'}) has no text to ingest`);
  }
  const questions = await loadQuestions(options.queries ?? DEMO_PATHS.queriesFile);
  const store = resolveStore(options.store);
  if (options.keep) await checkKeptStore(store);
  else await resetStore(store);
  const engine = await openEngine(store);
  try {
    // Kept only when an earlier run left records: a new file or schema (or :memory:) is fresh.
    const kept = options.keep && (await engine.store.scanRecords({ limit: 1 })).length > 0;
    progress.line(
      `corpus: ${plural(files.length, 'file')}, ${plural(chunks.length, 'chunk')}; database: ${describeStore(options.store)}`,
    );
    const handle = engine.as(options.agent);
    const ingested = await ingestChunks(handle, chunks, progress);
    progress.line(`asking ${questions.length} questions`);
    const outcomes = await runAgentLoop(handle, questions, {
      similarityThreshold: options.threshold,
      onOutcome: (outcome, index, total) => progress.line(formatOutcome(outcome, index, total)),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    progress.update('verifying the audit chains');
    const audit = await engine.verifyAudit();
    progress.line(`audit: ${audit.ok ? 'ok' : 'FAILED'}`);
    return buildReport({
      corpus: {
        source: options.corpus ?? 'default',
        files: files.length,
        chunks: chunks.length,
        deduplicatedChunks: ingested.deduplicated,
      },
      database: reportDatabase(options.store, kept),
      agent: options.agent,
      similarityThreshold: options.threshold,
      outcomes,
      audit,
    });
  } finally {
    await engine.close();
  }
}

/** DuckDB paths are relative to the current directory. */
function resolveStore(spec: StoreSpec): StoreSpec {
  return spec.kind === 'duckdb' && spec.path !== IN_MEMORY
    ? { kind: 'duckdb', path: resolve(spec.path) }
    : spec;
}

function reportDatabase(spec: StoreSpec, kept: boolean): ReportDatabase {
  return spec.kind === 'duckdb'
    ? { store: 'duckdb', path: spec.path, kept }
    : { store: 'postgres', url: maskUrl(spec.url), schema: spec.schema, kept };
}
