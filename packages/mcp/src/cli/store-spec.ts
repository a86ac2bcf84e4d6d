import { existsSync } from 'node:fs';
import {
  createEngine,
  type Embedder,
  type Engine,
  type MemoryStore,
  MnemoError,
} from '@mnemo/core';
import { type EmbedderSpec, openEmbedder } from './embedder-spec.js';
import { UsageError } from './usage-error.js';

/** Where the CLI's memory lives. */
export type StoreSpec =
  | { readonly kind: 'duckdb'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string | undefined };

export const DEFAULT_STORE = 'duckdb:./mnemo.duckdb';

// What `@mnemo/store-postgres` accepts; `pg_` names are reserved by PostgreSQL.
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Parses `--store`: `duckdb:<file>` (a path or `:memory:`) or `postgres:<url>`; a bare
 * `postgres://…` or `postgresql://…` URL is accepted too. Messages never repeat a URL
 * (it may hold a password).
 */
export function parseStoreSpec(text: string, schema: string | undefined): StoreSpec {
  if (schema !== undefined && (!SCHEMA_PATTERN.test(schema) || schema.startsWith('pg_'))) {
    throw new UsageError(
      `--pg-schema must be 1-63 characters of a-z 0-9 _, not starting with a digit or pg_, got '${schema}'`,
    );
  }
  const bareUrl = /^postgres(ql)?:\/\//.test(text);
  const colon = text.indexOf(':');
  if (colon <= 0 && !bareUrl) {
    throw new UsageError(`--store must be duckdb:<file> or postgres:<url>, got '${text}'`);
  }
  const kind = bareUrl ? 'postgres' : text.slice(0, colon);
  const rest = bareUrl ? text : text.slice(colon + 1);
  if (kind === 'duckdb') {
    if (rest.trim() === '') throw new UsageError('--store duckdb:<file> needs a file name');
    if (schema !== undefined) throw new UsageError('--pg-schema applies to postgres stores only');
    return { kind: 'duckdb', path: rest };
  }
  if (kind === 'postgres' || kind === 'postgresql') {
    let protocol = '';
    try {
      protocol = new URL(rest).protocol;
    } catch {}
    if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
      throw new UsageError(
        '--store postgres:<url> needs a postgres:// URL, e.g. postgres:postgres://user:password@127.0.0.1:5432/db',
      );
    }
    return { kind: 'postgres', url: rest, schema };
  }
  throw new UsageError(
    `--store: unknown store '${kind}' (expected duckdb:<file> or postgres:<url>)`,
  );
}

/** The store for people: `DuckDB <path>` or `PostgreSQL <host>/<db>` (never the password). */
export function describeStore(spec: StoreSpec): string {
  if (spec.kind === 'duckdb') return `DuckDB ${spec.path}`;
  const url = new URL(spec.url);
  return `PostgreSQL ${url.host}${url.pathname}${spec.schema === undefined ? '' : `, schema ${spec.schema}`}`;
}

/** `text` with the store URL's password masked, in case a driver message quotes it. */
export function redactSecrets(text: string, spec: StoreSpec | undefined): string {
  if (spec?.kind !== 'postgres') return text;
  let secrets: string[] = [];
  try {
    const url = new URL(spec.url);
    secrets = [
      url.password,
      decodeURIComponent(url.password),
      url.searchParams.get('password'),
    ].filter((secret): secret is string => secret !== null && secret.length >= 4);
  } catch {}
  let redacted = text;
  for (const secret of secrets) redacted = redacted.split(secret).join('***');
  return redacted;
}

/**
 * The store's package is loaded only when used (each pulls in its database driver).
 * `existing`: a PostgreSQL schema is not created (a command that only reads).
 */
async function openStore(spec: StoreSpec, existing: boolean): Promise<MemoryStore> {
  if (spec.kind === 'duckdb') {
    const { createDuckDBStore } = await import('@mnemo/store-duckdb');
    return createDuckDBStore({ path: spec.path });
  }
  const { createPostgresStore } = await import('@mnemo/store-postgres');
  return createPostgresStore({
    connectionString: spec.url,
    ...(spec.schema === undefined ? {} : { schema: spec.schema }),
    createSchema: !existing,
  });
}

export interface OpenOptions {
  /**
   * The command only reads: a DuckDB file or PostgreSQL schema that does not
   * exist is an error, not a new one.
   */
  existing?: boolean;
  experienceMemory?: boolean;
  /** Default: none (lexical recall only). */
  embedder?: EmbedderSpec | undefined;
}

/** An initialized engine, the embedder it was given, and how to close both. */
export interface OpenedEngine {
  readonly engine: Engine;
  readonly embedder: Embedder | undefined;
  close(): Promise<void>;
}

/**
 * Opens the embedder (a local model loads here, before the store opens) and then the
 * store, and initializes the engine (DuckDB holds its file until `close()`).
 */
export async function openEngine(
  spec: StoreSpec,
  options: OpenOptions = {},
): Promise<OpenedEngine> {
  if (
    options.existing === true &&
    spec.kind === 'duckdb' &&
    spec.path !== ':memory:' &&
    !existsSync(spec.path)
  ) {
    throw new MnemoError(
      'NOT_FOUND',
      `no database at ${spec.path}; name one with --store duckdb:<file> or --store postgres:<url>`,
    );
  }
  const opened = options.embedder === undefined ? undefined : await openEmbedder(options.embedder);
  let engine: Engine | undefined;
  const close = async () => {
    try {
      await engine?.close();
    } finally {
      await opened?.close();
    }
  };
  try {
    engine = createEngine({
      store: await openStore(spec, options.existing === true),
      experienceMemory: options.experienceMemory ?? false,
      ...(opened === undefined ? {} : { embedder: opened.embedder }),
    });
    await engine.init();
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  return { engine, embedder: opened?.embedder, close };
}

/** Runs `fn` on an open engine and closes it afterwards, whatever happens. */
export async function withEngine<T>(
  spec: StoreSpec,
  options: OpenOptions,
  fn: (engine: Engine) => Promise<T>,
): Promise<T> {
  const opened = await openEngine(spec, options);
  try {
    return await fn(opened.engine);
  } finally {
    await opened.close();
  }
}
