import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  type AuditHead,
  type Grant,
  type LexicalQuery,
  type MemoryStore,
  MnemoError,
  type PlanStats,
  type ScoredRecord,
  type StoreTx,
  serialTx,
  type TermFrequency,
  type VectorQuery,
} from '@mnemo/core';
import {
  ACCESS_FOLD_ROWS,
  type AccessChange,
  AccessLog,
  countLoggedAccesses,
  foldAccesses,
  logAccesses,
  logTouches,
} from './access-log.js';
import { deferredTransaction } from './deferred-tx.js';
import { FILE_IN_USE, mapDuckDBError, storeClosed } from './errors.js';
import { Journal, type JournalFrame } from './journal.js';
import { MIGRATIONS } from './migrations.js';
import { PendingWrites } from './pending-writes.js';
import { type IndexedPlan, PlanIndex } from './plan-index.js';
import * as planQueries from './plan-queries.js';
import { countFreshPostings, DEFAULT_RUN_POSTINGS, sortFreshPostings } from './postings-runs.js';
import * as queries from './queries.js';
import { RecordKeys } from './record-keys.js';
import { type IndexedDocument, type RankedId, SearchIndex } from './search-index.js';
import {
  loadSearchIndex,
  loadVectors,
  recordsById,
  scoreCandidates,
} from './search-index-queries.js';
import { Session } from './session.js';
import { Params } from './sql.js';

/** The name the store's file is attached under. */
const CATALOG = 'mnemo';

/**
 * Rows per row group, DuckDB's unit of parallel work (default 122,880): with
 * the default, a table of 100,000 records was one row group, scanned by one
 * thread; in groups of 16,384 a vector search at 100k records runs on every
 * core (semantic recall p50 155 ms to 100 ms on two).
 */
const ROW_GROUP_SIZE = 16_384;

/**
 * Float compressions the instance never uses. Every vector search reads the
 * whole embedding column: at 100k records of 384 floats, 85 ms with ALP's
 * decoding against 25 ms uncompressed (semantic recall 123 to 104 ms), while
 * dense embeddings take about 16 % more room. DuckDB chooses compressions per
 * instance, not per column (and not for an array's floats), so this also
 * covers the few DOUBLE columns.
 */
const DISABLED_COMPRESSIONS = 'alp,alprd';

/**
 * Values of a hash join's small side that DuckDB may push into the other
 * side's scan as a filter (default 50). Past it, `id IN (SELECT unnest(…))`
 * of more than 50 ids stopped filtering the scan: scoring 80 vector
 * candidates took 57–65 ms instead of 10, and a vector search at 100,000
 * records keeps up to about 120.
 */
const DYNAMIC_OR_FILTERS = 2_048;

/** The journal's file is the database file's path with this appended. */
export const JOURNAL_SUFFIX = '.mnemo-journal';

/**
 * Most records one journaled transaction writes; a larger one (a chunk of
 * `rememberMany`) runs on the file, where it costs about what applying it
 * would, and stays out of memory once committed.
 */
const MAX_DEFERRED_RECORDS = 256;

/** Most records one transaction applying the journal writes. */
const MAX_APPLY_RECORDS = 2_000;

/**
 * A `remember` or a recall at a time waits this long, or for this many
 * records or frames, before the frames pending are applied, so that one
 * transaction applies many. A read applies them first (a read of records,
 * those that insert records).
 */
const APPLY_DELAY_MS = 100;
const APPLY_BATCH = 256;

/** Pending records, or frames, past which a transaction waits for the journal to be applied first. */
const MAX_PENDING = 8_000;

const sqlString = (value: string) => `'${value.replaceAll("'", "''")}'`;

export interface DuckDBStoreOptions {
  /** A database file (created if missing) or `':memory:'`. */
  path: string;
  /**
   * DuckDB configuration options for the instance, for example `{ threads: '2' }`.
   * The store sets `disabled_compression_methods` itself (see README, "Embedding storage").
   * A setting DuckDB refuses fails `init()` with `INVALID_INPUT` naming it.
   */
  config?: Record<string, string>;
  /** Most idle connections kept open for reads outside transactions (default 4; an integer ≥ 0). */
  maxReaders?: number;
  /**
   * The embedder's dimensions, to store embeddings in a fixed-size `FLOAT[n]`
   * array (faster cosine) instead of a `FLOAT[]` list. Fixed by the first
   * `init()` of a file. Either way, the first embedding stored fixes the size
   * of all others (`DIMENSION_MISMATCH` otherwise).
   */
  vectorDimensions?: number;
  /**
   * How many new postings (one per distinct term of a record) accumulate in
   * write order before they are sorted by term into the lexical index
   * (default 131,072, about 8,000 records). See "Lexical index" in the README.
   */
  postingsRunSize?: number;
  /**
   * Where lexical and vector searches find their records (default
   * `'memory'`): on an index in this process's memory of every live
   * record's postings, filterable fields and embedding (as int8 codes),
   * loaded from the file by the first search that needs each part and kept
   * in step with every commit, or `'sql'`, in queries over the tables. Both
   * give the same answers. See "Search index in memory" in the README.
   */
  searchIndex?: 'memory' | 'sql';
  /**
   * With the search index in memory: `init()` loads all of it, the
   * embeddings' codes included, before it returns, so that no search waits
   * for a load (default false: the first search that needs each part loads
   * it). At 100,000 records on this project's 2-core machine, on a slow
   * day: `init()` 4.0–4.1 s instead of 0.1, then the first lexical recall
   * 62–65 ms instead of 2.6 s and the first semantic one 128–137 ms
   * instead of 1.0–1.5 s. A lazy load holds writes back while it runs, as
   * it runs between commits.
   */
  preloadSearchIndex?: boolean;
}

/** The keys of `DuckDBStoreOptions`: any other is `INVALID_INPUT` (the type keeps the list complete). */
const STORE_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({
    path: true,
    config: true,
    maxReaders: true,
    vectorDimensions: true,
    postingsRunSize: true,
    searchIndex: true,
    preloadSearchIndex: true,
  } satisfies Record<keyof DuckDBStoreOptions, true>),
);

function invalid(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `${field}: ${message}`, { details: { field } });
}

/**
 * A `MemoryStore` on DuckDB. One process holds a database file for writing;
 * within it, transactions run one at a time on a single writer connection
 * (DuckDB's own rule for a file), while reads use a small pool of other
 * connections and see the last committed state.
 */
export function createDuckDBStore(options: DuckDBStoreOptions): MemoryStore {
  if (typeof options?.path !== 'string' || options.path.length === 0) {
    throw invalid('path', 'a file path or ":memory:" is required');
  }
  // A misspelt option was ignored (`searchindex: 'sql'` kept the index in memory).
  for (const key of Object.keys(options)) {
    if (!STORE_OPTIONS.has(key)) {
      throw invalid(key, 'is not a known option');
    }
  }
  const config: unknown = options.config;
  if (
    config !== undefined &&
    (typeof config !== 'object' || config === null || Array.isArray(config))
  ) {
    throw invalid('config', 'must be an object of DuckDB settings');
  }
  const readers = options.maxReaders;
  if (readers !== undefined && (!Number.isInteger(readers) || readers < 0)) {
    throw invalid('maxReaders', 'must be an integer ≥ 0');
  }
  const dimensions = options.vectorDimensions;
  if (
    dimensions !== undefined &&
    (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > queries.MAX_FIXED_DIMENSIONS)
  ) {
    throw invalid(
      'vectorDimensions',
      `must be an integer from 1 to ${queries.MAX_FIXED_DIMENSIONS}`,
    );
  }
  const runSize = options.postingsRunSize;
  if (runSize !== undefined && (!Number.isInteger(runSize) || runSize < 1)) {
    throw invalid('postingsRunSize', 'must be a positive integer');
  }
  const searchIndex = options.searchIndex;
  if (searchIndex !== undefined && searchIndex !== 'memory' && searchIndex !== 'sql') {
    throw invalid('searchIndex', "must be 'memory' or 'sql'");
  }
  const preload = options.preloadSearchIndex;
  if (preload !== undefined && typeof preload !== 'boolean') {
    throw invalid('preloadSearchIndex', 'must be a boolean');
  }
  if (preload === true && searchIndex === 'sql') {
    throw invalid('preloadSearchIndex', "there is no index to load with searchIndex 'sql'");
  }
  return new DuckDBStore(options);
}

/**
 * The in-memory instance the file is attached to, with the caller's `config`.
 * A setting DuckDB refuses (an unknown name, a value it cannot parse) is the
 * caller's input: `INVALID_INPUT` naming the setting, found by trying each
 * alone, since DuckDB's own message for a bad value ("Failed to set config")
 * names none. It was `INTERNAL`.
 */
async function createInstance(config: Record<string, string> | undefined): Promise<DuckDBInstance> {
  try {
    return await DuckDBInstance.create(':memory:', config);
  } catch (error) {
    if (config === undefined || Object.keys(config).length === 0) throw error;
    let refused = 'config';
    for (const [name, value] of Object.entries(config)) {
      const alone = await DuckDBInstance.create(':memory:', { [name]: value }).then(
        (instance) => {
          instance.closeSync();
          return true;
        },
        () => false,
      );
      if (!alone) {
        refused = `config.${name}`;
        break;
      }
    }
    const message = error instanceof Error ? error.message : String(error);
    throw new MnemoError(
      'INVALID_INPUT',
      `${refused}: DuckDB refused the setting: ${message.split('\n', 1)[0]}`,
      { details: { field: refused }, cause: error },
    );
  }
}

/**
 * The database files open in this process, by canonical path. DuckDB refuses a
 * second process but not a second instance in the same one, and two stores on
 * one file would each act as its only writer, with their own caches: one
 * overwrites what the other acknowledged.
 */
const OPEN_FILES = new Set<string>();

/**
 * Registers `path` as open in this process, or throws if another store holds
 * it; null for `:memory:`. Returns its canonical path (symbolic links
 * resolved), under which the store attaches the file and finds its journal,
 * whatever name it was opened by.
 */
function claimFile(path: string): string | null {
  if (path === ':memory:') return null;
  const absolute = resolve(path);
  let key = absolute;
  try {
    key = realpathSync(absolute);
  } catch {
    try {
      // No file yet: the folder's canonical path.
      key = join(realpathSync(dirname(absolute)), basename(absolute));
    } catch {
      // The folder does not exist: DuckDB reports that when it opens the file.
    }
  }
  if (OPEN_FILES.has(key)) {
    throw new MnemoError(
      'STORE_UNAVAILABLE',
      `DuckDB file ${path} is already open by another store of this process: use that store (two would each act as the file's only writer and lose each other's writes)`,
      { details: FILE_IN_USE },
    );
  }
  OPEN_FILES.add(key);
  return key;
}

class DuckDBStore implements MemoryStore {
  readonly capabilities = { name: 'duckdb', multiProcess: false } as const;
  private instance: DuckDBInstance | null = null;
  private writer: Session | null = null;
  private readers: Session[] = [];
  private readonly idle: Session[] = [];
  private opening: Promise<void> | null = null;
  // Audit chain heads as committed. This process is the file's only writer, so the cache
  // stays true; it saves a read per write.
  private readonly heads = new Map<string, AuditHead>();
  // Every live plan's signature, in step with committed writes (see PlanIndex).
  private readonly plans = new PlanIndex();
  // Every live record's postings (and embeddings once asked for), in step with committed
  // writes once loaded (see SearchIndex).
  private searchIndex: SearchIndex | null = null;
  private indexLoading: Promise<SearchIndex> | null = null;
  private vectorsLoading: Promise<SearchIndex> | null = null;
  // Size of the FLOAT[n] embedding column, or null for a FLOAT[] list: read back from the
  // schema, then set by the commit that stores the first embedding.
  private fixedDimensions: number | null = null;
  // The embedding size once committed (it never changes after): saves a read per write.
  private dimensions: number | null = null;
  // The dedup keys and ids of the file's records (and the pending frames'), loaded on the
  // first write (see RecordKeys).
  private recordKeys: RecordKeys | null = null;
  // Postings committed to `mnemo_postings` since they were last sorted (deletes not subtracted).
  private freshPostings = 0;
  private sorting = false;
  // Accesses logged and not folded into the records yet, added to every record read (see
  // AccessLog); a fold waits for the reads running (`activeReads`, `readsDone`) and holds new
  // ones back (`folding`). close() waits for them too: closing a connection under a running
  // query crashes the process.
  private readonly accesses = new AccessLog();
  private foldQueued = false;
  private folding: Promise<void> | null = null;
  private activeReads = 0;
  private readonly drained: (() => void)[] = [];
  // Set once init() has finished: the migrations and index loads run before anything else.
  private ready = false;
  // The file this store holds in the process-wide registry (see OPEN_FILES), by canonical path, if any.
  private file: string | null = null;
  private closed = false;
  // Tail of the queue of transactions on the writer connection.
  private queue: Promise<unknown> = Promise.resolve();
  // Tail of the queue of callers' transactions, deferred or not: they run one at a time.
  private transactions: Promise<unknown> = Promise.resolve();
  // The journal of a file store (null for `:memory:`), the frames it holds that the file
  // does not yet, and the seq the next frame takes.
  private journal: Journal | null = null;
  private readonly pending = new PendingWrites();
  private nextSeq = 1;
  private applyQueued = false;
  // The timer that queues the application of a few pending frames (see APPLY_DELAY_MS).
  private applyTimer: NodeJS.Timeout | null = null;
  // Reads waiting for the frames up to `seq` to be in the file.
  private readonly waiters: { seq: number; resolve(): void; reject(error: unknown): void }[] = [];
  // Set when applying the journal failed: every call fails with it until the store is reopened.
  private broken: MnemoError | null = null;

  constructor(private readonly options: DuckDBStoreOptions) {}

  init(): Promise<void> {
    if (this.closed) return Promise.reject(storeClosed());
    this.opening ??= this.open().catch((error) => {
      this.opening = null;
      this.release();
      throw error;
    });
    return this.opening;
  }

  private async open(): Promise<void> {
    this.file = claimFile(this.options.path);
    // DuckDB's own write-ahead log, left by a process that stopped without closing the file:
    // attaching the file replays it.
    const replayed = this.file !== null && existsSync(`${this.file}.wal`);
    try {
      // The file is attached to an in-memory instance because only ATTACH sets the row
      // group size (see ROW_GROUP_SIZE); every connection then makes it its default.
      this.instance = await createInstance(this.options.config);
      const connection = await this.instance.connect();
      await connection.run(`SET GLOBAL disabled_compression_methods = '${DISABLED_COMPRESSIONS}'`);
      await connection.run(`SET GLOBAL dynamic_or_filter_threshold = ${DYNAMIC_OR_FILTERS}`);
      await connection.run(
        `ATTACH ${sqlString(this.file ?? ':memory:')} AS ${CATALOG} (ROW_GROUP_SIZE ${ROW_GROUP_SIZE})`,
      );
      this.writer = await Session.open(this.instance, CATALOG, connection);
    } catch (error) {
      throw mapDuckDBError(error, `opening ${this.options.path}`);
    }
    const writer = this.writer;
    // DuckDB 1.5 keeps the entries that replaying its log adds to an index that is not a key
    // (the dedup key, plan token and grant indexes) aside until the index is first used. The
    // checkpoint that closing the file runs drops them: the rows stay, lookups through the
    // index miss them (a duplicate is stored, a grant is not found), and deleting them is a
    // FATAL error. A CHECKPOINT statement keeps them, so one runs before anything else. Until
    // it completes the log stays, and the next open runs it again.
    if (replayed) await writer.exec('CHECKPOINT');
    await writer.exec(
      'CREATE TABLE IF NOT EXISTS mnemo_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)',
    );
    const [row] = await writer.all(
      'SELECT coalesce(max(version), 0) AS version FROM mnemo_migrations',
    );
    const current = Number(row?.version ?? 0);
    const known = MIGRATIONS.at(-1)?.version ?? 0;
    if (current > known) {
      // Code that does not know a table would write past it: the file is for newer code only.
      throw new MnemoError(
        'STORE_UNAVAILABLE',
        `${this.options.path} is at schema version ${current}; this @mnemo/store-duckdb knows versions up to ${known}: upgrade it`,
      );
    }
    // Before the migrations: once they ran, the file would no longer look new to a retry.
    const journaled = this.file === null ? null : this.openJournal(current === 0);
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      await this.inTransaction(writer, async () => {
        for (const statement of migration.statements({
          dimensions: this.options.vectorDimensions ?? null,
        })) {
          await writer.exec(statement);
        }
        const p = new Params();
        await writer.exec(
          `INSERT INTO mnemo_migrations (version, name) VALUES (${p.scalar(migration.version)}, ${p.scalar(migration.name)})`,
          p,
        );
      });
    }
    this.fixedDimensions = await queries.embeddingColumnSize(writer);
    // Embeddings stored in a FLOAT[] list by an earlier version (see fixEmbeddingColumn).
    const dimensions =
      this.fixedDimensions === null ? await queries.embeddingDimensions(writer) : null;
    if (
      dimensions !== null &&
      (await this.inTransaction(writer, () => queries.fixEmbeddingColumn(writer, dimensions)))
    ) {
      this.fixedDimensions = dimensions;
    }
    if (journaled !== null) await this.applyJournal(writer, journaled);
    // Accesses logged by an earlier process (perhaps one that crashed), its journal's included,
    // go into the records first.
    if ((await countLoggedAccesses(writer)) > 0) {
      await this.inTransaction(writer, () => foldAccesses(writer));
    }
    await planQueries.loadPlanIndex(writer, this.plans);
    this.freshPostings = await countFreshPostings(writer);
    // A file written before the sorted table existed, or closed with a full run pending.
    if (this.freshPostings >= this.runSize) await this.sortPostings(writer);
    this.ready = true;
    if (this.options.preloadSearchIndex === true) await this.loadVectors();
  }

  /**
   * Opens the journal beside the file and returns the frames a process that
   * stopped before applying them left in it (see "Journal" in the README;
   * `applyJournal` applies them). A new file (`fresh`: no schema before this
   * open) has no journal of its own: frames beside it belong to a database
   * deleted or moved without its journal, and applying them to this one would
   * fail or, worse, succeed.
   */
  private openJournal(fresh: boolean): JournalFrame[] {
    const path = `${this.file}${JOURNAL_SUFFIX}`;
    let opened: ReturnType<typeof Journal.open>;
    try {
      opened = Journal.open(path);
    } catch (error) {
      throw new MnemoError('STORE_UNAVAILABLE', `DuckDB: opening the journal ${path} failed`, {
        cause: error,
      });
    }
    if (fresh && opened.frames.length > 0) {
      opened.journal.close(false);
      throw new MnemoError(
        'STORE_UNAVAILABLE',
        `DuckDB: the journal ${path} holds acknowledged writes (${opened.frames.length} frames) of a database that is not ${this.options.path}, which is new: put that database back beside it, or delete the journal to start empty`,
      );
    }
    this.journal = opened.journal;
    return opened.frames;
  }

  /** Applies the journal's frames that the file does not hold yet, then empties the journal. */
  private async applyJournal(writer: Session, journaled: readonly JournalFrame[]): Promise<void> {
    const journal = this.journal as Journal;
    const applied = await queries.journalApplied(writer);
    const frames = journaled.filter((frame) => frame.seq > applied);
    const replay = new PendingWrites();
    for (const frame of frames) replay.add(frame);
    while (replay.frames.length > 0) {
      const chunk = replay.take(MAX_APPLY_RECORDS);
      const tx = transactionOn(writer, {
        committed: new Map(),
        advanced: new Map(),
        seen: { dimensions: null, fixed: this.fixedDimensions, postings: 0 },
        recordKeys: async () => new RecordKeys(),
        planChanges: [],
        indexChanges: [],
        accesses: new AccessLog(),
        accessChanges: [],
      });
      try {
        await this.inTransaction(writer, () => applyFrames(tx, writer, chunk));
      } catch (error) {
        throw new MnemoError(
          'STORE_UNAVAILABLE',
          `DuckDB: applying the journal ${this.file}${JOURNAL_SUFFIX} to ${this.options.path} failed (${(error as Error).message}); the file and the journal are left as they were`,
          { cause: error },
        );
      }
      replay.applied(chunk);
    }
    journal.clear();
    this.nextSeq = Math.max(applied, journaled.at(-1)?.seq ?? 0) + 1;
  }

  private get runSize(): number {
    return this.options.postingsRunSize ?? DEFAULT_RUN_POSTINGS;
  }

  /** Sorts the fresh postings into a run (see postings-runs.ts), in a transaction of its own. */
  private async sortPostings(writer: Session): Promise<void> {
    await this.inTransaction(writer, () => sortFreshPostings(writer, this.runSize));
    this.freshPostings = 0;
  }

  /**
   * Queues the sorting of the fresh postings behind the writes already queued
   * once a run's worth has committed. It is not part of any caller's write: if
   * it fails, it rolls back, nothing is lost, and the next write queues it again.
   */
  private scheduleSorting(writer: Session): void {
    if (this.sorting || this.freshPostings < this.runSize) return;
    this.sorting = true;
    const run = this.queue.then(async () => {
      try {
        if (!this.closed) await this.sortPostings(writer);
      } finally {
        this.sorting = false;
      }
    });
    this.queue = run.catch(() => undefined);
  }

  /**
   * Queues a fold of the access log behind the writes already queued once it
   * holds `ACCESS_FOLD_ROWS` rows. Like sorting, it is nobody's write: if it
   * fails, it rolls back and the log stays as it was.
   */
  private scheduleFold(writer: Session): void {
    if (this.foldQueued || this.accesses.rows < ACCESS_FOLD_ROWS) return;
    this.foldQueued = true;
    const run = this.queue.then(async () => {
      try {
        if (!this.closed) await this.fold(writer);
      } finally {
        this.foldQueued = false;
      }
    });
    this.queue = run.catch(() => undefined);
  }

  /** Folds the access log into the records with no read running (see AccessLog). */
  private async fold(writer: Session): Promise<void> {
    let reopen = () => {};
    this.folding = new Promise<void>((resolve) => {
      reopen = resolve;
    });
    try {
      await this.readsDone();
      await this.inTransaction(writer, () => foldAccesses(writer));
      this.accesses.clear();
    } finally {
      this.folding = null;
      reopen();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.opening?.catch(() => undefined);
    // The transactions running, then what they queued: the pending frames' application last.
    await this.transactions.catch(() => undefined);
    if (this.pending.frames.length > 0 && this.broken === null) this.scheduleApply(true);
    await this.queue.catch(() => undefined);
    // Reads that started before close() run on pooled connections; later ones are refused.
    await this.readsDone();
    this.release();
  }

  /** Resolves once no read is running on a pooled connection. */
  private readsDone(): Promise<void> {
    if (this.activeReads === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private release(): void {
    for (const session of [...this.readers, ...(this.writer ? [this.writer] : [])]) {
      session.connection.closeSync();
    }
    this.readers = [];
    this.idle.length = 0;
    this.writer = null;
    this.instance?.closeSync();
    this.instance = null;
    if (this.applyTimer !== null) clearTimeout(this.applyTimer);
    this.applyTimer = null;
    // A journal whose frames are all in the file goes; otherwise the next open applies it.
    this.journal?.close(this.pending.frames.length === 0);
    this.journal = null;
    this.searchIndex?.close();
    this.ready = false;
    if (this.file !== null) OPEN_FILES.delete(this.file);
    this.file = null;
  }

  private openWriter(): Session {
    if (this.closed || !this.ready || this.writer === null) throw storeClosed();
    if (this.broken !== null) throw this.broken;
    return this.writer;
  }

  /**
   * `readCommitted` once every record acknowledged so far (or, for
   * `everything`, every write) is in the file (see `caughtUp`).
   */
  private async read<T>(
    fn: (session: Session) => Promise<T>,
    what: 'records' | 'everything' = 'records',
  ): Promise<T> {
    await this.caughtUp(what);
    return this.readCommitted(fn);
  }

  /**
   * Runs a read on an idle pooled connection (opening one if the pool has
   * room), never while the access log is being folded (see AccessLog). It
   * sees what is committed to the file, not the pending frames.
   */
  private async readCommitted<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    while (this.folding !== null) await this.folding;
    this.openWriter();
    this.activeReads += 1;
    try {
      return await this.readOn(fn);
    } finally {
      this.activeReads -= 1;
      if (this.activeReads === 0) for (const resolve of this.drained.splice(0)) resolve();
    }
  }

  /** `read`'s pooled connection. */
  private async readOn<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    const instance = this.instance as DuckDBInstance;
    let session = this.idle.pop();
    if (session === undefined) {
      try {
        session = await Session.open(instance, CATALOG);
      } catch (error) {
        throw mapDuckDBError(error, 'connecting');
      }
      this.readers.push(session);
    }
    try {
      return await fn(session);
    } finally {
      if (this.closed) {
        // close() closes every connection once no read runs.
      } else if (this.idle.length < (this.options.maxReaders ?? 4)) {
        this.idle.push(session);
      } else {
        this.readers = this.readers.filter((s) => s !== session);
        session.connection.closeSync();
      }
    }
  }

  private async inTransaction<T>(session: Session, fn: () => Promise<T>): Promise<T> {
    await session.exec('BEGIN TRANSACTION');
    try {
      const result = await fn();
      await session.exec('COMMIT');
      return result;
    } catch (error) {
      await session.exec('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** Runs `fn` on the writer connection once everything queued before it has run. */
  private enqueue<T>(fn: (writer: Session) => Promise<T>): Promise<T> {
    let writer: Session;
    try {
      writer = this.openWriter();
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.queue.then(() => {
      if (this.closed) throw storeClosed();
      return fn(writer);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs `fn` in a transaction, one at a time with every other. A write that
   * only inserts records, logs accesses and appends audit events (a
   * `remember`, a recall) is journaled and acknowledged once the journal is
   * on disk, and reaches the file later, several in one DuckDB transaction
   * (see "Journal" in the README); anything else runs on the file after
   * every pending frame.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    const run = this.transactions.then(async () => {
      this.openWriter();
      if (
        this.journal !== null &&
        (this.pending.records >= MAX_PENDING || this.pending.frames.length >= MAX_PENDING)
      ) {
        await this.caughtUp('everything');
      }
      const journal = this.journal;
      // Until the first remember of a file has read its records' keys there, a remember runs on
      // the file (see deferredTransaction).
      return journal === null ? this.onFile(fn) : this.deferred(fn, journal, this.recordKeys);
    });
    this.transactions = run.catch(() => undefined);
    return run;
  }

  /** Runs `fn` in a transaction on the file, after every pending frame. */
  private onFile<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.enqueue(async (writer) => {
      await this.applyPending(writer);
      return this.commitOn(writer, fn);
    });
  }

  /**
   * Runs `fn` on a deferred transaction (see deferred-tx.ts) and journals
   * what it wrote, unless it moved onto the file.
   */
  private async deferred<T>(
    fn: (tx: StoreTx) => Promise<T>,
    journal: Journal,
    recordKeys: RecordKeys | null,
  ): Promise<T> {
    // Once the transaction moves onto the file, its commit there waits for `fn` to settle.
    const moved: {
      to: { committed: Promise<void>; settle: (failure: { error: unknown } | null) => void } | null;
    } = { to: null };
    const deferred = deferredTransaction({
      dimensions: this.dimensions,
      recordKeys,
      pending: this.pending,
      committedHeads: this.heads,
      maxRecords: MAX_DEFERRED_RECORDS,
      read: (read) => this.readCommitted(read),
      nextTouch: () => this.accesses.nextTouch(),
      onFile: (records, accesses, events) => {
        let settle: (failure: { error: unknown } | null) => void = () => {};
        const settled = new Promise<void>((resolve, reject) => {
          settle = (failure) => (failure === null ? resolve() : reject(failure.error));
        });
        settled.catch(() => undefined);
        let ready: (tx: StoreTx) => void = () => {};
        const tx = new Promise<StoreTx>((resolve) => {
          ready = resolve;
        });
        const committed = this.onFile(async (fileTx) => {
          if (records.length > 0) await fileTx.insertRecords(records);
          for (const { ids, at } of accesses) await fileTx.touch(ids, at);
          if (events.length > 0) await fileTx.appendAudit(events);
          ready(fileTx);
          await settled;
        });
        moved.to = { committed, settle };
        return Promise.race([tx, committed.then(() => tx)]);
      },
    });
    const calls = serialTx(deferred.tx);
    let outcome: { result: T } | { error: unknown };
    try {
      outcome = { result: await fn(calls.tx) };
    } catch (error) {
      outcome = { error };
    }
    await calls.settled();
    if (moved.to !== null) {
      const { committed, settle } = moved.to;
      settle('error' in outcome ? outcome : null);
      await committed;
    }
    if ('error' in outcome) throw outcome.error;
    if (moved.to !== null) return outcome.result;
    const records = deferred.records();
    const accesses = deferred.accesses();
    const events = deferred.events();
    if (records.length > 0 || accesses.length > 0 || events.length > 0) {
      const frame = { seq: this.nextSeq, records, accesses, events };
      journal.append(frame);
      this.nextSeq += 1;
      this.pending.add(frame);
      // Records are journaled only once the keys are known (see deferredTransaction).
      recordKeys?.addRecords(records);
      for (const { ids, at } of accesses) {
        this.accesses.journaled(ids, at);
        this.plans.touch(ids, at);
      }
      this.scheduleApply();
    }
    return outcome.result;
  }

  /**
   * Queues the application of the pending frames behind what is queued: at
   * once when `now` or once `APPLY_BATCH` records or frames are pending, else
   * after `APPLY_DELAY_MS`, so that writes one at a time share the
   * transactions that apply them.
   */
  private scheduleApply(now = false): void {
    if (this.applyQueued) return;
    if (!now && this.pending.records < APPLY_BATCH && this.pending.frames.length < APPLY_BATCH) {
      // Unref'd: a process may exit with frames pending; its next open applies them.
      this.applyTimer ??= setTimeout(() => this.scheduleApply(true), APPLY_DELAY_MS).unref();
      return;
    }
    if (this.applyTimer !== null) clearTimeout(this.applyTimer);
    this.applyTimer = null;
    this.applyQueued = true;
    const run = this.queue.then(async () => {
      this.applyQueued = false;
      // The frames pending now: those journaled meanwhile wait for a batch of their own.
      await this.applyPending(this.writer as Session, this.pending.lastSeq() ?? 0);
      if (this.pending.frames.length > 0) this.scheduleApply();
    });
    this.queue = run.catch(() => undefined);
  }

  /**
   * Writes the pending frames (up to seq `upTo`) into the file, up to
   * `MAX_APPLY_RECORDS` records per transaction, each with the seq of its
   * last frame; empties the journal once none is left. A failure leaves the
   * store unusable until it is reopened, which applies the journal again.
   */
  private async applyPending(writer: Session, upTo = Number.POSITIVE_INFINITY): Promise<void> {
    for (let first = this.pending.frames[0]; first !== undefined && first.seq <= upTo; ) {
      const frames = this.pending.take(MAX_APPLY_RECORDS, upTo);
      try {
        await this.commitOn(writer, (tx) => applyFrames(tx, writer, frames));
      } catch (error) {
        this.broken ??= new MnemoError(
          'STORE_UNAVAILABLE',
          `DuckDB: applying the journal to ${this.options.path} failed (${(error as Error).message}); the acknowledged writes stay in the journal, and reopening the store applies them`,
          { cause: error },
        );
        for (const waiter of this.waiters.splice(0)) waiter.reject(this.broken);
        throw this.broken;
      }
      // Both at once: a read adds the accesses of the journal and of the log, once each.
      this.accesses.logged(frames.flatMap((frame) => frame.accesses));
      this.pending.applied(frames);
      this.scheduleFold(writer);
      const applied = frames.at(-1)?.seq ?? 0;
      const waiting = this.waiters.splice(0);
      for (const waiter of waiting) {
        if (waiter.seq <= applied) waiter.resolve();
        else this.waiters.push(waiter);
      }
      first = this.pending.frames[0];
    }
    if (this.pending.frames.length === 0) this.journal?.clear();
  }

  /**
   * Resolves once every frame journaled so far that inserts records (or,
   * for `everything`, every frame) is in the file. The accesses of the
   * others are added to every record read from memory (see AccessLog);
   * only a read of the audit log needs their events in the file.
   */
  private caughtUp(what: 'records' | 'everything' = 'records'): Promise<void> {
    if (this.broken !== null) return Promise.reject(this.broken);
    const seq = what === 'records' ? this.pending.lastRecordsSeq() : this.pending.lastSeq();
    if (seq === null) return Promise.resolve();
    this.scheduleApply(true);
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  /** Runs `fn` in a transaction on the file, then brings the caches in step with it. */
  private async commitOn<T>(writer: Session, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    // Chain heads this transaction advanced; they enter the cache only once it commits.
    const advanced = new Map<string, AuditHead>();
    // Plan index changes, likewise applied only once the transaction commits.
    const planChanges: PlanChange[] = [];
    const indexChanges: IndexChange[] = [];
    const accessChanges: AccessChange[] = [];
    const seen = { dimensions: this.dimensions, fixed: this.fixedDimensions, postings: 0 };
    const calls = serialTx(
      transactionOn(writer, {
        committed: this.heads,
        advanced,
        seen,
        recordKeys: () => this.loadRecordKeys(writer),
        planChanges,
        indexChanges,
        accesses: this.accesses,
        accessChanges,
      }),
    );
    const keysLoaded = this.recordKeys !== null;
    let result: T;
    try {
      result = await this.inTransaction(writer, async () => {
        try {
          return await fn(calls.tx);
        } finally {
          // COMMIT or ROLLBACK only once no call of the callback is still running.
          await calls.settled();
        }
      });
    } catch (error) {
      // Keys loaded inside a transaction that rolled back saw its uncommitted deletes.
      if (!keysLoaded) this.recordKeys = null;
      throw error;
    }
    for (const [chain, head] of advanced) this.heads.set(chain, head);
    this.dimensions = seen.dimensions;
    this.fixedDimensions = seen.fixed;
    this.freshPostings += seen.postings;
    this.scheduleSorting(writer);
    this.accesses.commit(accessChanges);
    this.scheduleFold(writer);
    for (const change of afterTheirRecords(planChanges, planChangeIds)) {
      if (change.kind === 'add') this.plans.add(change.id, change.plan);
      else if (change.kind === 'remove') this.plans.remove(change.id);
      else if (change.kind === 'grant') this.plans.grant(change.grant);
      else if (change.kind === 'touch') this.plans.touch(change.ids, change.at);
      else this.plans.putStats(change.stats);
    }
    // Before the load has run, the load reads these changes from the file instead.
    const index = this.searchIndex;
    if (index !== null) {
      for (const change of afterTheirRecords(indexChanges, indexChangeIds)) {
        if (change.kind === 'add') index.add(change.document, change.terms);
        else if (change.kind === 'remove') index.remove(change.id);
        else index.grant(change.grant);
      }
    }
    return result;
  }

  private async loadRecordKeys(writer: Session): Promise<RecordKeys> {
    if (this.recordKeys === null) {
      const keys = new RecordKeys();
      for (const { dedupKey, id } of await queries.allRecordKeys(writer)) keys.add(dedupKey, id);
      this.recordKeys = keys;
    }
    return this.recordKeys;
  }

  get: MemoryStore['get'] = (visibility, ids) =>
    this.read(async (s) => this.accesses.applyAll(await queries.getRecords(s, visibility, ids)));
  list: MemoryStore['list'] = (query) =>
    this.read(async (s) => this.accesses.applyAll(await queries.listRecords(s, query)));
  searchLexical: MemoryStore['searchLexical'] = (query) =>
    this.options.searchIndex === 'sql'
      ? this.read(async (s) => this.accesses.applyAll(await queries.searchLexical(s, query)))
      : this.searchLexicalInMemory(query);

  /**
   * Ranks on the search index, then reads the winners' rows. A forget that
   * commits between the two leaves a winner missing or deleted: the index has
   * it by the time the rows are read, so ranking again settles it (after a
   * few tries, the SQL query answers instead).
   */
  private async searchLexicalInMemory(query: LexicalQuery): Promise<ScoredRecord[]> {
    await this.caughtUp();
    const index = await this.loadSearchIndex();
    // Ranking takes the thread for 2–3 ms at 100,000 records. It waits for the event loop's
    // next turn, so the vector search a hybrid recall starts beside it (whose int8 pass is
    // longer) runs its pass first, on both cores, and DuckDB scores its candidates while this
    // ranks: hybrid p50 26–28 → 24–25 ms; lexical recall alone unchanged.
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const hits = await this.withRows(
        index.search(query.visibility, query.filters, query.terms, query.limit),
      );
      if (hits !== null) return hits;
    }
    return this.read(async (s) => this.accesses.applyAll(await queries.searchLexical(s, query)));
  }

  /** The rows of `ranked`, or null if one is missing or deleted (a forget committed since). */
  private async withRows(ranked: readonly RankedId[]): Promise<ScoredRecord[] | null> {
    if (ranked.length === 0) return [];
    return this.read(async (s) => {
      const rows = await recordsById(
        s,
        ranked.map(({ id }) => id),
      );
      const hits: ScoredRecord[] = [];
      for (const { id, score } of ranked) {
        const record = rows.get(id);
        if (record === undefined || record.deletedAt !== null) return null;
        hits.push({ record: this.accesses.apply(record), score });
      }
      return hits;
    });
  }

  /** The search index, loaded on first use in the writer's queue, so between commits. */
  private loadSearchIndex(): Promise<SearchIndex> {
    if (this.indexLoading === null) {
      const load = this.enqueue(async (writer) => {
        const index = new SearchIndex();
        await loadSearchIndex(writer, index);
        this.searchIndex = index;
        return index;
      });
      this.indexLoading = load.catch((error) => {
        this.indexLoading = null;
        throw error;
      });
    }
    return this.indexLoading;
  }

  searchVector: MemoryStore['searchVector'] = (query) =>
    this.options.searchIndex === 'sql'
      ? this.readEmbeddings(async (s, fixed) =>
          this.accesses.applyAll(await queries.searchVector(s, query, fixed)),
        )
      : this.searchVectorInMemory(query);

  /**
   * Runs a query whose SQL spells the embedding column's type. While the column is a FLOAT[]
   * list, the transaction that stores the first embedding makes it an array (see
   * fixEmbeddingColumn), so the query runs in the writer's queue, between commits, where the
   * type it is given is the one in force.
   */
  private async readEmbeddings<T>(
    fn: (s: Session, fixed: number | null) => Promise<T>,
  ): Promise<T> {
    await this.caughtUp();
    const fixed = this.fixedDimensions;
    return fixed === null
      ? this.enqueue((writer) => fn(writer, this.fixedDimensions))
      : this.readCommitted((s) => fn(s, fixed));
  }

  /**
   * Finds the candidates on the search index's vector codes, then has DuckDB
   * score them as the SQL query would and read the winners' rows. A forget
   * that commits in between leaves a candidate missing or deleted (and with
   * it perhaps the bound that kept another record out): the codes are
   * searched again. When the codes cannot tell, or after a few
   * tries, the SQL query answers.
   */
  private async searchVectorInMemory(query: VectorQuery): Promise<ScoredRecord[]> {
    // A zero vector has no direction: nothing is similar to it (as in queries.searchVector).
    if (query.vector.every((x) => x === 0)) return [];
    await this.caughtUp();
    const index = await this.loadVectors();
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const ids = index.vectorCandidates(
        query.visibility,
        query.filters,
        query.vector,
        query.limit,
      );
      if (ids === null) break;
      if (ids.length === 0) return [];
      const { hits, intact } = await this.readEmbeddings(async (s, fixed) => {
        const scored = await scoreCandidates(s, ids, query.vector, fixed, query.limit);
        return { ...scored, hits: this.accesses.applyAll(scored.hits) };
      });
      if (intact) return hits;
    }
    return this.readEmbeddings(async (s, fixed) =>
      this.accesses.applyAll(await queries.searchVector(s, query, fixed)),
    );
  }

  /** The search index holding vectors: they are loaded on first use, in the writer's queue. */
  private loadVectors(): Promise<SearchIndex> {
    if (this.vectorsLoading === null) {
      const load = this.loadSearchIndex().then((index) =>
        this.enqueue(async (writer) => {
          index.holdVectors();
          await loadVectors(writer, index);
          return index;
        }),
      );
      this.vectorsLoading = load.catch((error) => {
        this.vectorsLoading = null;
        throw error;
      });
    }
    return this.vectorsLoading;
  }

  findPlanCandidates: MemoryStore['findPlanCandidates'] = (query) =>
    // Answered from the in-memory plan index alone (see PlanIndex); no connection needed.
    this.caughtUp().then(() => {
      this.openWriter();
      return this.plans.candidates(query);
    });
  readAudit: MemoryStore['readAudit'] = (page) =>
    this.read((s) => queries.readAudit(s, page), 'everything');
  auditHeads: MemoryStore['auditHeads'] = () =>
    this.read((s) => queries.auditHeads(s), 'everything');
  embeddingDimensions: MemoryStore['embeddingDimensions'] = async () => {
    // No pending frame fixes it: a transaction that fixes the size moves onto the file.
    if (this.dimensions !== null) return this.dimensions;
    const size = await this.read((s) => queries.embeddingDimensions(s));
    this.dimensions ??= size;
    return size;
  };
  scanRecords: MemoryStore['scanRecords'] = (page) =>
    this.read(async (s) =>
      (await queries.scanRecords(s, page)).map((record) => this.accesses.apply(record)),
    );
  listGrants: MemoryStore['listGrants'] = (recordIds) =>
    this.read((s) => queries.listGrants(s, recordIds));

  listPlanStats: MemoryStore['listPlanStats'] = (planIds) =>
    this.read((s) => planQueries.listPlanStats(s, planIds));
}

/** Writes `frames` into the file, with the seq of the last as the journal's applied mark. */
async function applyFrames(
  tx: StoreTx,
  writer: Session,
  frames: readonly JournalFrame[],
): Promise<void> {
  await tx.insertRecords(frames.flatMap((frame) => frame.records));
  // Logged directly: the store took the accesses in when it journaled them.
  const touches = frames.flatMap((frame) => frame.accesses);
  if (touches.length > 0) await logTouches(writer, touches);
  await tx.appendAudit(frames.flatMap((frame) => frame.events));
  const last = frames.at(-1);
  if (last !== undefined) await queries.setJournalApplied(writer, last.seq);
}

/** A change of the plan index, in the order the transaction made it. */
type PlanChange =
  | { kind: 'add'; id: string; plan: IndexedPlan }
  | { kind: 'remove'; id: string }
  | { kind: 'grant'; grant: Grant }
  | { kind: 'touch'; ids: readonly string[]; at: Date }
  | { kind: 'stats'; stats: PlanStats };

/** A change of the search index, in the order the transaction made it. */
type IndexChange =
  | { kind: 'add'; document: IndexedDocument; terms: readonly TermFrequency[] }
  | { kind: 'remove'; id: string }
  | { kind: 'grant'; grant: Grant };

/** The record a change adds, or the one a grant or stats change is about (else null). */
interface ChangeIds {
  added: string | null;
  about: string | null;
}

const planChangeIds = (change: PlanChange): ChangeIds => ({
  added: change.kind === 'add' ? change.id : null,
  about:
    change.kind === 'grant'
      ? change.grant.recordId
      : change.kind === 'stats'
        ? change.stats.planId
        : null,
});

const indexChangeIds = (change: IndexChange): ChangeIds => ({
  added: change.kind === 'add' ? change.document.id : null,
  about: change.kind === 'grant' ? change.grant.recordId : null,
});

/**
 * `changes` in the order to apply them: each grant or stats change about a
 * record the same transaction adds later moves to just after that add. The
 * store port lets `putGrants` come before `insertRecords`, while an index
 * ignores grants on records it does not hold (and adding a record starts it
 * with none).
 */
function afterTheirRecords<C>(changes: readonly C[], ids: (change: C) => ChangeIds): C[] {
  const lastAdd = new Map<string, number>();
  changes.forEach((change, i) => {
    const { added } = ids(change);
    if (added !== null) lastAdd.set(added, i);
  });
  const waiting = new Map<number, C[]>();
  const ordered: C[] = [];
  changes.forEach((change, i) => {
    const { about } = ids(change);
    const add = about === null ? undefined : lastAdd.get(about);
    if (add !== undefined && add > i) {
      waiting.set(add, [...(waiting.get(add) ?? []), change]);
      return;
    }
    ordered.push(change, ...(waiting.get(i) ?? []));
  });
  return ordered;
}

interface TransactionState {
  /** Chain heads as committed. */
  committed: ReadonlyMap<string, AuditHead>;
  /** Chain heads this transaction advanced. */
  advanced: Map<string, AuditHead>;
  /**
   * The embedding size this transaction saw, the size of the FLOAT[n] embedding column (null
   * while a FLOAT[] list), and the postings it wrote.
   */
  seen: { dimensions: number | null; fixed: number | null; postings: number };
  /** The store's superset of dedup keys. */
  recordKeys: () => Promise<RecordKeys>;
  /** Plan index changes this transaction made, applied once it commits. */
  planChanges: PlanChange[];
  /** Search index changes likewise. */
  indexChanges: IndexChange[];
  /** The access log, and this transaction's changes to it, taken in once it commits. */
  accesses: AccessLog;
  accessChanges: AccessChange[];
}

function transactionOn(s: Session, state: TransactionState): StoreTx {
  const { committed, advanced, seen, planChanges, indexChanges, accesses, accessChanges } = state;
  // A size read inside the transaction is cached once it commits (see `transaction`).
  const dimensions = async () => {
    seen.dimensions ??= await queries.embeddingDimensions(s);
    return seen.dimensions;
  };
  // A forgotten or redacted record leaves both indexes.
  const drop = (ids: readonly string[]) => {
    for (const id of ids) {
      planChanges.push({ kind: 'remove', id });
      indexChanges.push({ kind: 'remove', id });
    }
  };
  return {
    get: async (visibility, ids) =>
      accesses.applyAll(await queries.getRecords(s, visibility, ids), accessChanges),
    list: async (query) => accesses.applyAll(await queries.listRecords(s, query), accessChanges),
    findLiveDuplicates: async (dedupKeys, now) => {
      const known = await state.recordKeys();
      const candidates = dedupKeys.filter((key) => known.mayHaveDedupKey(key));
      return queries.findLiveDuplicates(s, candidates, now);
    },
    embeddingDimensions: dimensions,
    fixEmbeddingDimensions: async (size) => {
      if (seen.dimensions === null) {
        seen.dimensions = await queries.fixEmbeddingDimensions(s, size);
        // The first embedding of a store opened without `vectorDimensions`: its size is the
        // column's from now on (see queries.fixEmbeddingColumn).
        if (seen.fixed === null && (await queries.fixEmbeddingColumn(s, seen.dimensions))) {
          seen.fixed = seen.dimensions;
        }
      }
      return seen.dimensions;
    },
    findIds: (ids) => queries.findIds(s, ids),
    insertRecords: async (records) => {
      (await state.recordKeys()).addRecords(records);
      seen.postings += await queries.insertRecords(s, records, seen.fixed);
      for (const { record, isPlan, planTokens, terms, docLength } of records) {
        if (!isPlan && record.deletedAt === null) {
          indexChanges.push({ kind: 'add', document: { ...record, docLength }, terms });
        }
        if (isPlan && planTokens !== null && record.deletedAt === null) {
          planChanges.push({
            kind: 'add',
            id: record.id,
            plan: { tokens: planTokens, record },
          });
        }
      }
    },
    deleteRecords: async (ids, mode, at) => {
      await queries.deleteRecords(s, ids, mode, at);
      drop(ids);
      if (mode === 'hard') accessChanges.push({ kind: 'forget', ids });
    },
    redactRecords: async (ids, content, at) => {
      await queries.redactRecords(s, ids, content, at);
      drop(ids);
    },
    lockPlanStats: (planId) => planQueries.lockPlanStats(s, planId),
    putPlanStats: async (stats) => {
      await planQueries.putPlanStats(s, stats);
      planChanges.push({ kind: 'stats', stats });
    },
    putGrants: async (grants) => {
      await queries.putGrants(s, grants);
      for (const grant of grants) {
        planChanges.push({ kind: 'grant', grant });
        indexChanges.push({ kind: 'grant', grant });
      }
    },
    touch: async (ids, at) => {
      const unique = [...new Set(ids)];
      await logAccesses(s, unique, at, accesses.nextTouch());
      accessChanges.push({ kind: 'touch', ids: unique, at });
      planChanges.push({ kind: 'touch', ids: unique, at });
    },
    auditHead: async (chain) =>
      advanced.get(chain) ?? committed.get(chain) ?? (await queries.auditHead(s, chain)),
    appendAudit: async (events) => {
      await queries.appendAudit(s, events);
      for (const event of events)
        advanced.set(event.chain, { chain: event.chain, seq: event.seq, hash: event.hash });
    },
  };
}
