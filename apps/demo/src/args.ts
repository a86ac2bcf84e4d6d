import { parseArgs } from 'node:util';
import { ID_PATTERN } from '@mnemo/core';
import { DEFAULT_SIMILARITY_THRESHOLD } from '@mnemo/experience';
import { DEFAULT_PG_SCHEMA, parseStoreSpec, pgSchema, type StoreSpec } from './store-spec.js';
import { UsageError } from './usage-error.js';

export const DEFAULT_DB = './mnemo-demo.duckdb';
export const DEFAULT_AGENT = 'demo-agent';

/** The demo's command line, validated: a run's options, or a request for the usage alone. */
export type DemoArgs = { help: true } | DemoRunArgs;

/** The options of a run. */
export interface DemoRunArgs {
  help: false;
  /** A folder of .md/.txt files, or null for the default corpus. */
  corpus: string | null;
  /** A file of questions, or null for the shipped queries.txt. */
  queries: string | null;
  /** `--store`, `--db` or the default DuckDB file. */
  store: StoreSpec;
  /** Keep the database (DuckDB file, PostgreSQL schema) of an earlier run instead of starting fresh. */
  keep: boolean;
  /** Similarity threshold for `recallPlan`, in (0, 1]. */
  threshold: number;
  agent: string;
  /** Print the report as one JSON object instead of text. */
  json: boolean;
}

export const USAGE = `Usage: pnpm demo [options]     (or: node apps/demo/dist/main.js [options])

Runs an agent loop over a corpus: for each question, look for a cached plan
(recallPlan); on a hit replay it, on a miss run lexical retrieval, score the
outcome and cache it (rememberPlan). Prints hit rate, retrieval work saved,
latency and the audit check.

Options:
  --corpus <folder>   .md/.txt files to ingest, searched recursively
                      (default: the repository's READMEs + apps/demo/corpus)
  --queries <file>    one question per line, '#' starts a comment line
                      (default: apps/demo/queries.txt)
  --db <file>         DuckDB database file, or :memory: (default: ${DEFAULT_DB})
  --store <spec>      the store: duckdb:<file> (the same as --db <file>) or
                      postgres:<url>, e.g. postgres:postgres://user:pw@127.0.0.1:5432/db
  --pg-schema <name>  with postgres: the schema to use (default: ${DEFAULT_PG_SCHEMA})
  --keep              reuse the database of an earlier run (default: start fresh:
                      delete the DuckDB file, or drop and recreate the schema)
  --threshold <n>     plan similarity threshold in (0, 1] (default: ${DEFAULT_SIMILARITY_THRESHOLD})
  --agent <id>        agent id the loop runs as (default: ${DEFAULT_AGENT})
  --json              print the report as one JSON object on the last stdout line
  -h, --help          show this help

Exit codes: 0 done, 1 store unavailable or unexpected error, 2 bad arguments or input files.`;

/**
 * Parses and validates `argv` (without the node and script paths). A leading
 * `--`, as in `pnpm demo -- --json`, is ignored. With `-h` or `--help`, the
 * other options' values are not checked. Throws `UsageError`.
 */
export function parseDemoArgs(argv: readonly string[]): DemoArgs {
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse(argv[0] === '--' ? argv.slice(1) : argv).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help === true) return { help: true };
  return {
    help: false,
    corpus: nonEmpty('--corpus', values.corpus) ?? null,
    queries: nonEmpty('--queries', values.queries) ?? null,
    store: store(values),
    keep: values.keep === true,
    threshold:
      values.threshold === undefined ? DEFAULT_SIMILARITY_THRESHOLD : threshold(values.threshold),
    agent: agent(values.agent ?? DEFAULT_AGENT),
    json: values.json === true,
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      corpus: { type: 'string' },
      queries: { type: 'string' },
      db: { type: 'string' },
      store: { type: 'string' },
      'pg-schema': { type: 'string' },
      keep: { type: 'boolean' },
      threshold: { type: 'string' },
      agent: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function store(values: ReturnType<typeof parse>['values']): StoreSpec {
  const db = nonEmpty('--db', values.db);
  const schema = nonEmpty('--pg-schema', values['pg-schema']);
  if (db !== undefined && values.store !== undefined) {
    throw new UsageError(
      '--store and --db cannot be used together (--db <file> is short for --store duckdb:<file>)',
    );
  }
  const spec: StoreSpec =
    values.store === undefined
      ? { kind: 'duckdb', path: db ?? DEFAULT_DB }
      : parseStoreSpec(values.store, schema === undefined ? DEFAULT_PG_SCHEMA : pgSchema(schema));
  if (schema !== undefined && spec.kind !== 'postgres') {
    throw new UsageError('--pg-schema applies only to --store postgres:<url>');
  }
  return spec;
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === '') throw new UsageError(`${flag} must not be empty`);
  return value;
}

/** An unsigned decimal, optionally with an exponent: not the hex, binary or octal `Number` reads. */
const DECIMAL = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function threshold(text: string): number {
  const value = DECIMAL.test(text.trim()) ? Number(text) : Number.NaN;
  if (!(value > 0 && value <= 1)) {
    throw new UsageError(`--threshold must be a number in (0, 1], got '${text}'`);
  }
  return value;
}

function agent(id: string): string {
  if (!ID_PATTERN.test(id)) {
    throw new UsageError(`--agent must be 1-256 characters of A-Z a-z 0-9 . _ -, got '${id}'`);
  }
  return id;
}
