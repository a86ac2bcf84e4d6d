import { existsSync } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { createEngine, type Engine, type MemoryStore, MnemoError } from '@mnemo/core';
import { withExperienceMemory } from '@mnemo/experience';
import { createDuckDBStore, JOURNAL_SUFFIX } from '@mnemo/store-duckdb';
import { createPostgresStore } from '@mnemo/store-postgres';
import { resetPostgresSchema } from './postgres-schema.js';
import type { StoreSpec } from './store-spec.js';
import { UsageError } from './usage-error.js';

export const IN_MEMORY = ':memory:';

// A DuckDB database file starts with an 8-byte checksum followed by this magic.
const DUCKDB_MAGIC = 'DUCK';
const MAGIC_OFFSET = 8;

/**
 * Makes room for a fresh run: deletes the DuckDB file, or drops and recreates
 * the PostgreSQL schema (see `resetPostgresSchema`).
 */
export async function resetStore(spec: StoreSpec): Promise<void> {
  if (spec.kind === 'duckdb') await resetDatabaseFile(spec.path);
  else await resetPostgresSchema(spec.url, spec.schema);
}

/**
 * Checks a store an earlier run may have left (`--keep`): a `--db` that holds
 * something other than a DuckDB database is refused (`UsageError`), as a fresh
 * run refuses to delete it, not left to fail opening.
 */
export async function checkKeptStore(spec: StoreSpec): Promise<void> {
  if (spec.kind === 'duckdb' && spec.path !== IN_MEMORY) await refuseIfNotDuckDB(spec.path, 'open');
}

/**
 * Makes room for a fresh database at `path`: deletes the file, its `.wal` and
 * the store's journal (which a run stopped by Ctrl-C or a crash leaves).
 * Refuses (`UsageError`) to delete a non-empty file that is not a DuckDB
 * database, or anything that is not a regular file (a folder, a device such as
 * /dev/null, a FIFO), so a mistyped `--db` cannot destroy a document; and
 * (`STORE_UNAVAILABLE`, as a run with `--keep` would) a database another
 * store has open, such as another run's, in this process or another.
 */
export async function resetDatabaseFile(path: string): Promise<void> {
  if (path === IN_MEMORY) return;
  await refuseIfNotDuckDB(path, 'overwrite');
  if (existsSync(path)) await refuseIfInUse(path);
  await rm(path, { force: true });
  await rm(`${path}.wal`, { force: true });
  await rm(`${path}${JOURNAL_SUFFIX}`, { force: true });
}

/**
 * Throws the store's `STORE_UNAVAILABLE` (`details.reason` `file_in_use`) when
 * another store has the DuckDB file at `path` open: deleting it would delete
 * that run's database under it. Opening it takes the file's lock, which is
 * how DuckDB tells; any other failure to open it (a file of another schema
 * or DuckDB version) is no reason to keep a file about to be replaced.
 */
async function refuseIfInUse(path: string): Promise<void> {
  const probe = createDuckDBStore({ path });
  try {
    await probe.init();
  } catch (error) {
    if (MnemoError.isInstance(error) && error.details.reason === 'file_in_use') throw error;
  } finally {
    await probe.close();
  }
}

async function refuseIfNotDuckDB(path: string, verb: 'open' | 'overwrite'): Promise<void> {
  if (!(await isDuckDBFileOrAbsent(path))) {
    throw new UsageError(
      `the database ${path} exists and is not a DuckDB database; refusing to ${verb} it`,
    );
  }
}

async function isDuckDBFileOrAbsent(path: string): Promise<boolean> {
  // Only a regular file can be a database: a device such as /dev/null reads as empty (and
  // deleting it as root breaks the system), and opening a FIFO blocks until a writer comes.
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw new UsageError(`the database ${path} cannot be opened: ${(error as Error).message}`);
  }
  if (!info.isFile()) return false;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new UsageError(`the database ${path} cannot be opened: ${(error as Error).message}`);
  }
  try {
    const header = Buffer.alloc(MAGIC_OFFSET + DUCKDB_MAGIC.length);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    if (bytesRead === 0) return true;
    return header.toString('latin1', MAGIC_OFFSET) === DUCKDB_MAGIC;
  } finally {
    await handle.close();
  }
}

/** An initialized engine on the store, with experience memory on. */
export async function openEngine(spec: StoreSpec): Promise<Engine> {
  const engine = withExperienceMemory(createEngine({ store: createStore(spec) }));
  try {
    await engine.init();
  } catch (error) {
    await engine.close();
    throw error;
  }
  return engine;
}

function createStore(spec: StoreSpec): MemoryStore {
  if (spec.kind === 'duckdb') return createDuckDBStore({ path: spec.path });
  return createPostgresStore({
    connectionString: spec.url,
    schema: spec.schema,
    // The demo has no embedder: plain real[] columns, and no CREATE EXTENSION on someone's server.
    vector: 'array',
    // The loop runs one operation at a time.
    maxConnections: 4,
  });
}
