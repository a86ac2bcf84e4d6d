import {
  type AuditHead,
  type LexicalQuery,
  type MemoryStore,
  MnemoError,
  type ScoredRecord,
  type StoreTx,
  serialTx,
  type VectorQuery,
} from '@mnemo/core';
import { ACCESS_FOLD_ROWS, countLoggedAccesses, foldAccesses, logAccesses } from './access-log.js';
import type { CachedRecords } from './cached-records.js';
import { ChainHeads } from './chain-heads.js';
import { mapPostgresError, storeClosed } from './errors.js';
import { FollowedCache } from './followed-cache.js';
import { LexicalCache } from './lexical-cache.js';
import {
  lexicalStats,
  loadLexicalCache,
  refreshLexicalCache,
  sameStats,
  scoreLexicalCandidates,
} from './lexical-cache-queries.js';
import { MIGRATIONS, type VectorColumn } from './migrations.js';
import * as planQueries from './plan-queries.js';
import { ownPool, type PostgresClient, type PostgresPool, statementsFor } from './pool.js';
import * as queries from './queries.js';
import { SCORE_MARGIN } from './scores.js';
import { Session } from './session.js';
import { Params } from './sql.js';
import { VectorCache } from './vector-cache.js';
import {
  goneRecords,
  loadVectorCache,
  refreshVectorCache,
  scoreVectorCandidates,
} from './vector-cache-queries.js';

/** Where the store connects: exactly one of `pool` or `connectionString` (else `INVALID_INPUT`). */
export type PostgresStoreOptions = PostgresStoreSettings &
  (
    | {
        /**
         * A pool you own (a `pg.Pool` or anything shaped like `PostgresPool`);
         * `close()` leaves it open. Turn JIT compilation off on its connections
         * (`options: '-c jit=off'`), as the pool the store creates does, and
         * give it `pipeline: true` (see the README).
         */
        pool: PostgresPool;
        connectionString?: never;
      }
    | {
        pool?: never;
        /** A connection string: the store creates and owns a `pg.Pool`, with JIT compilation off. */
        connectionString: string;
      }
  );

/** Everything else a store is created with. */
export interface PostgresStoreSettings {
  /** Schema holding the tables (created if missing), so several stores can share a database. Default `mnemo`. */
  schema?: string;
  /**
   * Embedding storage: `pgvector` (the server's `vector` extension, created if
   * available), `array` (`real[]` with exact cosine in SQL), or `auto` (pgvector
   * when available, else array). Fixed by the first `init()` of a schema. Default `auto`.
   * The extension is created database-wide (in the first schema of the search
   * path, usually `public`) and outlives the store's schema.
   */
  vector?: 'auto' | 'pgvector' | 'array';
  /**
   * With pgvector: the embedder's dimensions, for a `vector(n)` column. No ANN
   * (HNSW) index is built: vector search is exact, and such an index would
   * slow every write without serving a query.
   */
  vectorDimensions?: number;
  /**
   * Run the statements every write repeats (dedup lock and one-key lookup,
   * audit head, record and audit inserts) as named prepared statements,
   * parsed and planned once per connection: one `remember` at a time, about
   * 70 % more per second. Lookups of many rows by key are planned on every
   * call either way (a cached plan made while a table was small would stay a
   * sequential scan as it grows, for every key). Turn off behind a pooler
   * that cannot carry prepared statements across its server connections
   * (PgBouncer before 1.21 in transaction mode), or for a pool-like double
   * that only takes query strings. Default true.
   */
  prepareStatements?: boolean;
  /**
   * Whether `init()` may create the schema. With `false`, a schema without
   * mnemo's tables is `NOT_FOUND` and nothing is created (for tools that only
   * read, so that a mistyped schema name is reported rather than made).
   * Default true.
   */
  createSchema?: boolean;
  /**
   * How a vector search finds its top. `memory`: from int8 codes of every
   * embedding kept in this process (a quarter of the embeddings' size: about
   * 40 MB for 100,000 records of 384 dimensions, loaded in the background
   * from the first vector search, see `preloadSearchIndex`, and kept current
   * with every process's writes from then on); only the few records whose
   * cosine can still reach the top are then checked in SQL and scored
   * exactly as the full scan scores them (a search within a thread scans the
   * thread in SQL). `sql`: every visible embedding is scored in the
   * database. Same results either way. Default `memory`.
   */
  vectorIndex?: 'memory' | 'sql';
  /**
   * How a lexical (BM25) search without filters, or with memory type and
   * scope filters only, finds its top. `memory`: from every record's
   * postings kept in this process (loaded in the background from the first
   * lexical search, see `preloadSearchIndex`, and kept current with every
   * process's writes from then on), scored with the caller's statistics,
   * which PostgreSQL computes; only the few records that can reach the top
   * are then checked and scored in SQL, exactly as the SQL search scores
   * them. `sql`: the search reads the query terms' postings in the
   * database. Same results either way. Default `memory`.
   */
  lexicalIndex?: 'memory' | 'sql';
  /**
   * With `vectorIndex` or `lexicalIndex` `memory`: `init()` loads those
   * caches before it returns (seconds at 100,000 records). Otherwise the
   * first search that would use a cache starts its load in the background,
   * and searches answer in SQL (the same answers, slower) until it is
   * loaded. Use it where a process serves searches as soon as it starts.
   * Default `false`.
   */
  preloadSearchIndex?: boolean;
  /** For the pool created from `connectionString`: statement timeout in ms (default 30,000). */
  statementTimeoutMs?: number;
  /** For the pool created from `connectionString`: connect timeout in ms (default 5,000). */
  connectionTimeoutMs?: number;
  /** For the pool created from `connectionString`: most connections (default 10). */
  maxConnections?: number;
}

/** The longest delay a Node timer keeps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Tries of a transaction that failed on a deadlock or serialization failure. */
const MAX_ATTEMPTS = 3;
// Lowercase identifiers; `pg_` names are reserved by PostgreSQL.
const SCHEMA_PATTERN = /^(?!pg_)[a-z_][a-z0-9_]{0,62}$/;

/** The keys of `PostgresStoreOptions`: any other is `INVALID_INPUT` (the type keeps the list complete). */
const STORE_OPTIONS: ReadonlySet<string> = new Set(
  Object.keys({
    pool: true,
    connectionString: true,
    schema: true,
    vector: true,
    vectorDimensions: true,
    prepareStatements: true,
    createSchema: true,
    vectorIndex: true,
    lexicalIndex: true,
    preloadSearchIndex: true,
    statementTimeoutMs: true,
    connectionTimeoutMs: true,
    maxConnections: true,
  } satisfies Record<AnyKey<PostgresStoreOptions>, true>),
);

/** The keys of every member of a union (`keyof` of a union has only the keys all members share). */
type AnyKey<T> = T extends unknown ? keyof T : never;

function invalid(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `${field}: ${message}`, { details: { field } });
}

/**
 * A `MemoryStore` on PostgreSQL through `pg`. Many processes and machines can
 * share one database: transactions are real PostgreSQL transactions, the audit
 * chain head is advanced under a row lock, and `init()` migrates under an
 * advisory lock.
 */
export function createPostgresStore(options: PostgresStoreOptions): MemoryStore {
  if (typeof options !== 'object' || options === null)
    throw invalid('options', 'must be an object');
  // A misspelt option was ignored (`schame: 'x'` put the tables in `mnemo`).
  for (const key of Object.keys(options)) {
    if (!STORE_OPTIONS.has(key)) throw invalid(key, 'is not a known option');
  }
  if ((options.pool === undefined) === (options.connectionString === undefined)) {
    throw invalid('options', 'give exactly one of pool or connectionString');
  }
  // A null pool would have the store open its own on pg's defaults (PGHOST…).
  const pool: unknown = options.pool;
  if (
    pool !== undefined &&
    (typeof pool !== 'object' ||
      pool === null ||
      !['connect', 'query', 'end'].every(
        (method) => typeof (pool as Record<string, unknown>)[method] === 'function',
      ))
  ) {
    throw invalid('pool', 'must be a pg.Pool: an object with connect, query and end methods');
  }
  const url: unknown = options.connectionString;
  if (url !== undefined && (typeof url !== 'string' || url.length === 0)) {
    throw invalid('connectionString', 'must be a non-empty string');
  }
  const schema = options.schema === undefined ? 'mnemo' : options.schema;
  if (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema)) {
    throw invalid('schema', 'must match [a-z_][a-z0-9_]{0,62} and not start with pg_');
  }
  for (const key of ['prepareStatements', 'createSchema', 'preloadSearchIndex'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean')
      throw invalid(key, 'must be a boolean');
  }
  if (options.vector !== undefined && !['auto', 'pgvector', 'array'].includes(options.vector)) {
    throw invalid('vector', 'must be auto, pgvector or array');
  }
  if (options.vectorIndex !== undefined && !['memory', 'sql'].includes(options.vectorIndex)) {
    throw invalid('vectorIndex', 'must be memory or sql');
  }
  if (options.lexicalIndex !== undefined && !['memory', 'sql'].includes(options.lexicalIndex)) {
    throw invalid('lexicalIndex', 'must be memory or sql');
  }
  const dimensions = options.vectorDimensions;
  if (
    dimensions !== undefined &&
    (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 16_000)
  ) {
    throw invalid('vectorDimensions', 'must be an integer from 1 to 16000');
  }
  // Node waits 1 ms for a timer longer than 2^31 - 1 ms: every statement would time out.
  for (const key of ['statementTimeoutMs', 'connectionTimeoutMs'] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isInteger(value) || value < 1 || value > MAX_TIMER_MS))
      throw invalid(key, `must be an integer from 1 to ${MAX_TIMER_MS}`);
  }
  const connections = options.maxConnections;
  if (connections !== undefined && (!Number.isInteger(connections) || connections < 1))
    throw invalid('maxConnections', 'must be a positive integer');
  return new PostgresStore(options, `"${schema}"`);
}

class PostgresStore implements MemoryStore {
  readonly capabilities = { name: 'postgres', multiProcess: true } as const;
  private pool: PostgresPool | null = null;
  private pgvector = false;
  private opening: Promise<void> | null = null;
  private closed = false;
  // The embedding size once committed: it never changes after, in any process.
  private dimensions: number | null = null;
  private readonly running = new Set<Promise<unknown>>();
  private readonly prepare: boolean;
  /** The vector cache (see VectorCache). */
  private readonly vectors = new FollowedCache<VectorCache>({
    create: () => new VectorCache(),
    load: (pool, cache, stopped) =>
      this.readOn(pool, (s) => loadVectorCache(s, cache, this.pgvector, stopped)),
    refresh: (pool, cache) => this.readOn(pool, (s) => refreshVectorCache(s, cache, this.pgvector)),
    gone: (pool, ids) => this.readOn(pool, (s) => goneRecords(s, ids)),
    close: (cache) => cache.close(),
  });
  /** The lexical cache (see LexicalCache). */
  private readonly lexicon = new FollowedCache<LexicalCache>({
    create: () => new LexicalCache(),
    load: (pool, cache, stopped) => this.readOn(pool, (s) => loadLexicalCache(s, cache, stopped)),
    refresh: (pool, cache) => this.readOn(pool, (s) => refreshLexicalCache(s, cache)),
    gone: (pool, ids) => this.readOn(pool, (s) => goneRecords(s, ids)),
    close: () => undefined,
  });
  /**
   * Accesses logged since the last fold this process knows of (at `init()`,
   * the log's rows, counted up to a fold's worth), and the fold running.
   */
  private accessesLogged = 0;
  private folding: Promise<void> | null = null;
  /** The audit chain heads this process last committed (see `ChainHeads`). */
  private readonly chainHeads = new ChainHeads();

  constructor(
    private readonly options: PostgresStoreOptions,
    private readonly schema: string,
  ) {
    this.prepare = options.prepareStatements ?? true;
  }

  init(): Promise<void> {
    if (this.closed) return Promise.reject(storeClosed());
    this.opening ??= this.open().catch((error) => {
      this.opening = null;
      throw error;
    });
    return this.opening;
  }

  private async open(): Promise<void> {
    const pool = this.options.pool ?? ownPool(this.options);
    try {
      await this.withClient(pool, async (s) => {
        await refuseStandby(s);
        // One migrator at a time per schema, across every process.
        await withAdvisoryLock(s, `mnemo:migrate:${this.schema}`, () => this.migrate(s));
        this.accessesLogged = await countLoggedAccesses(s, ACCESS_FOLD_ROWS);
      });
      if (this.options.preloadSearchIndex === true) await this.preload(pool);
    } catch (error) {
      if (this.options.pool === undefined) await pool.end().catch(() => undefined);
      throw error;
    }
    this.pool = pool;
    this.foldAccessesWhenDue(pool);
  }

  /** Loads the caches searches use (see `preloadSearchIndex`); both settled before either fails. */
  private async preload(pool: PostgresPool): Promise<void> {
    const loads = await Promise.allSettled([
      this.options.vectorIndex === 'sql' ? undefined : this.vectors.load(pool),
      this.options.lexicalIndex === 'sql' ? undefined : this.lexicon.load(pool),
    ]);
    for (const load of loads) if (load.status === 'rejected') throw load.reason;
  }

  /**
   * Runs `fn` on a dedicated client and returns it to the pool, discarding it
   * when its connection broke. A connection dying while held fails the running
   * query (mapped to STORE_UNAVAILABLE) and also emits `error` on the client,
   * which would crash the process if nobody listened.
   */
  private async withClient<T>(pool: PostgresPool, fn: (s: Session) => Promise<T>): Promise<T> {
    let client: PostgresClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw mapPostgresError(error, 'connecting');
    }
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken = error;
    };
    client.on?.('error', onError);
    try {
      return await fn(new Session(statementsFor(client), this.schema, this.prepare));
    } catch (error) {
      if (MnemoError.hasCode(error, 'STORE_UNAVAILABLE')) broken ??= error;
      throw error;
    } finally {
      client.off?.('error', onError);
      client.release(broken);
    }
  }

  /** The schema's name, unquoted. */
  private get schemaName(): string {
    return this.schema.slice(1, -1);
  }

  private async migrate(s: Session): Promise<void> {
    if (this.options.createSchema === false) {
      const name = new Params();
      const [found] = await s.all(
        `SELECT 1 AS found FROM pg_tables WHERE schemaname = ${name.add(this.schemaName, '::text')}
           AND tablename = 'mnemo_migrations'`,
        name,
      );
      if (found === undefined) {
        throw new MnemoError(
          'NOT_FOUND',
          `no mnemo schema "${this.schemaName}" in this database (createSchema is false)`,
        );
      }
    } else {
      // Not with createSchema false: a role that may only read could not run even these.
      await s.exec(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await s.exec(
        `CREATE TABLE IF NOT EXISTS ${this.schema}.mnemo_migrations (
           version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
    }
    const [row] = await s.all(
      `SELECT coalesce(max(version), 0) AS version FROM ${this.schema}.mnemo_migrations`,
    );
    const current = Number(row?.version ?? 0);
    const known = MIGRATIONS.at(-1)?.version ?? 0;
    if (current > known) {
      // Code that does not know a table would write past it (lexical search relies on
      // mnemo_term_stats being exact, for one): the schema is for newer code only.
      throw new MnemoError(
        'STORE_UNAVAILABLE',
        `schema "${this.schemaName}" is at version ${current}; this @mnemo/store-postgres knows versions up to ${known}: upgrade it`,
      );
    }
    const vector = current === 0 ? await this.chooseVectorColumn(s) : { kind: 'array' as const };
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      await s.transaction(async () => {
        for (const statement of migration.statements(this.schema, vector)) await s.exec(statement);
        const p = new Params();
        await s.exec(
          `INSERT INTO ${this.schema}.mnemo_migrations (version, name)
           VALUES (${p.add(migration.version, '::int')}, ${p.add(migration.name, '::text')})`,
          p,
        );
      });
    }
    // The schema decides, whatever this process asked for: read the column's type back.
    const type = new Params();
    const [column] = await s.all(
      `SELECT format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
       WHERE a.attrelid = ${type.add(`${this.schema}.mnemo_records`, '::regclass')} AND a.attname = 'embedding'`,
      type,
    );
    this.pgvector = String(column?.type ?? '').startsWith('vector');
  }

  private async chooseVectorColumn(s: Session): Promise<VectorColumn> {
    const wanted = this.options.vector ?? 'auto';
    if (wanted === 'array') return { kind: 'array' };
    const [available] = await s.all(
      `SELECT 1 AS ok FROM pg_available_extensions WHERE name = 'vector'`,
    );
    if (available !== undefined) {
      // The extension is database-wide: stores of other schemas may be creating it right now,
      // and two CREATE EXTENSIONs at once collide on the catalog's unique index.
      const created = await withAdvisoryLock(s, 'mnemo:create-extension:vector', () =>
        s.exec('CREATE EXTENSION IF NOT EXISTS vector').then(
          () => true,
          (error) => {
            if (wanted === 'pgvector') throw error;
            return false; // `auto`: without it (no privilege to create it, say), real[].
          },
        ),
      );
      if (created) return { kind: 'pgvector', dimensions: this.options.vectorDimensions ?? null };
    }
    if (wanted === 'pgvector') {
      throw new MnemoError(
        'STORE_UNAVAILABLE',
        'PostgreSQL: the vector extension (pgvector) is not available on this server',
      );
    }
    return { kind: 'array' };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.opening?.catch(() => undefined);
    await Promise.allSettled([...this.running]);
    // Both at once: each stops its load at the next page.
    await Promise.all([this.vectors.close(), this.lexicon.close()]);
    const pool = this.pool;
    this.pool = null;
    if (pool !== null && this.options.pool === undefined) await pool.end().catch(() => undefined);
  }

  private openPool(): PostgresPool {
    if (this.closed || this.pool === null) throw storeClosed();
    return this.pool;
  }

  /** Tracks an operation so that `close()` can wait for it. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    const done = () => this.running.delete(work);
    work.then(done, done);
    return work;
  }

  /**
   * `work` on the open pool, tracked as a whole so that `close()` lets it
   * finish; a closed store rejects it.
   */
  private onPool<T>(work: (pool: PostgresPool) => Promise<T>): Promise<T> {
    let pool: PostgresPool;
    try {
      pool = this.openPool();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.track(work(pool));
  }

  private read<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    return this.onPool((pool) => this.readOn(pool, fn));
  }

  /** `fn` on `pool`, untracked: for the steps of an operation tracked as a whole. */
  private readOn<T>(pool: PostgresPool, fn: (session: Session) => Promise<T>): Promise<T> {
    return fn(new Session(pool, this.schema, this.prepare));
  }

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.onPool((pool) => this.inTransaction(pool, fn));
  }

  private async inTransaction<T>(pool: PostgresPool, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    // The chains whose expected head turned out stale: later runs read their head, and the last
    // run expects none, so that the call never fails on a stale head.
    const stale = new Set<string>();
    for (let attempt = 1; ; attempt += 1) {
      const staleBefore = stale.size;
      try {
        return await this.attempt(pool, fn, { stale, expect: attempt < MAX_ATTEMPTS });
      } catch (error) {
        // A deadlock or serialization failure rolled everything back, or a chain head this
        // process expected was stale (another process advanced the chain): run it again.
        const sqlstate = MnemoError.isInstance(error) ? error.details.sqlstate : undefined;
        const staleHead = sqlstate === queries.STALE_HEAD_SQLSTATE && stale.size > staleBefore;
        if (attempt >= MAX_ATTEMPTS || (sqlstate !== '40P01' && sqlstate !== '40001' && !staleHead))
          throw error;
      }
    }
  }

  private attempt<T>(
    pool: PostgresPool,
    fn: (tx: StoreTx) => Promise<T>,
    { stale, expect }: { stale: Set<string>; expect: boolean },
  ): Promise<T> {
    return this.withClient(pool, async (s) => {
      // BEGIN's reply is not awaited here: on the store's own pool (pipeline mode) a write's
      // dedup lock and lookup, reads that change nothing, go out right behind it, which saves a
      // lone remember two of its seven round trips. Every other statement waits for the reply
      // (see transactionOn), and so does COMMIT.
      const begun = s.exec('BEGIN').then(() => undefined);
      begun.catch(() => undefined);
      const seen = { dimensions: this.dimensions, accesses: 0 };
      const unanswered: Promise<unknown>[] = [];
      const heads = {
        known: expect ? this.chainHeads : null,
        checked: new Set<string>(),
        stale,
        advanced: new Map<string, AuditHead>(),
      };
      const calls = serialTx(transactionOn(s, this.pgvector, seen, heads, begun, unanswered));
      try {
        let result: T;
        try {
          result = await fn(calls.tx);
        } finally {
          // COMMIT or ROLLBACK (and release the client) only once no call is still running.
          await calls.settled();
        }
        await begun;
        // COMMIT goes out behind the statements still unanswered. When one of them failed, the
        // server rolled the transaction back and answers COMMIT without an error: the
        // transaction fails with that statement's error, never with COMMIT's reply alone.
        const committed = s.exec('COMMIT');
        committed.catch(() => undefined);
        await Promise.all(unanswered);
        await committed;
        this.dimensions = seen.dimensions;
        this.accessesLogged += seen.accesses;
        for (const head of heads.advanced.values())
          this.chainHeads.committed(head, heads.checked.has(head.chain));
        this.foldAccessesWhenDue(pool);
        return result;
      } catch (error) {
        const cause = await firstFailure(unanswered, error);
        await s.exec('ROLLBACK').catch(() => undefined);
        throw cause;
      }
    });
  }

  /**
   * Folds the access log into the records (see access-log.ts) once it holds
   * `ACCESS_FOLD_ROWS` accesses this process knows of (see `accessesLogged`), in
   * the background: the recall whose commit got there does not wait for it,
   * and `close()` does. A fold that fails (the server gone, say) rolled
   * back and changed nothing; the log is still exact, and the next fold
   * takes it all.
   */
  private foldAccessesWhenDue(pool: PostgresPool): void {
    if (this.accessesLogged < ACCESS_FOLD_ROWS || this.folding !== null || this.closed) return;
    this.accessesLogged = 0;
    this.folding = this.track(
      this.withClient(pool, foldAccesses).then(
        () => undefined,
        () => undefined,
      ),
    ).finally(() => {
      this.folding = null;
    });
  }

  get: MemoryStore['get'] = (visibility, ids) =>
    this.read((s) => queries.getRecords(s, visibility, ids));
  list: MemoryStore['list'] = (query) => this.read((s) => queries.listRecords(s, query));
  searchLexical: MemoryStore['searchLexical'] = (query) =>
    this.options.lexicalIndex === 'sql' ||
    !queries.onlyFilters(query, (name) => queries.POSTING_FILTERS.has(name))
      ? this.read((s) => queries.searchLexical(s, query))
      : this.onPool((pool) => this.searchLexicalFromCache(pool, query));

  /**
   * Takes the caller's BM25 statistics from PostgreSQL, scores the records
   * of the lexical cache that may be visible with them, and has PostgreSQL
   * check the visibility and filters of the best (and of the records written
   * since the cache's snapshot) and score them, as the SQL search does, with
   * the statistics of that statement's snapshot. The answer stands when the
   * limit-th record scores above every record left out under those
   * statistics (see `LexicalCache`): the cache scored with them, or a write
   * changed them meanwhile and the candidates under the new ones are among
   * those scored. Otherwise, as `searchVectorFromCache` does, the deleted
   * candidates are dropped, or more are taken, or the new statistics are
   * used, and after a few tries the SQL search answers; as it does while the
   * cache loads (see `FollowedCache.fresh`).
   */
  private async searchLexicalFromCache(
    pool: PostgresPool,
    query: LexicalQuery,
  ): Promise<ScoredRecord[]> {
    // Independent (the statistics the candidates are scored with are checked against those of
    // the statement that scores them), so both at once; both settled before either fails the
    // search, which `close()` waits for as a whole.
    const inSql = () => this.readOn(pool, (s) => queries.searchLexical(s, query));
    const refreshed = this.lexicon.fresh(pool);
    if (refreshed === null) return inSql();
    const counted = this.readOn(pool, (s) => lexicalStats(s, query));
    await Promise.allSettled([refreshed, counted]);
    const cache = await refreshed;
    let stats = await counted;
    if (cache === null) return inSql();
    let depth = query.limit;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      let found = cache.candidates(query.visibility, query.filters, stats, depth);
      const from = cache.position;
      if (found === null || from === null) break;
      const drops = cache.drops;
      const sentIds = found.ids;
      const scored = await this.readOn(pool, (s) =>
        scoreLexicalCandidates(s, query, sentIds, from),
      );
      if (!sameStats(stats, scored.stats)) {
        // A write changed the statistics after they were read; the statement scored with the
        // new ones. Its answer stands if the candidates under those are among the ones it
        // scored, taken from a cache that has dropped no record since (one dropped may still
        // be live in that statement's snapshot, and would be bounded by nothing).
        stats = scored.stats;
        const again =
          cache.drops === drops
            ? cache.candidates(query.visibility, query.filters, stats, depth)
            : null;
        const sent = new Set(sentIds);
        if (again === null || !again.ids.every((id) => sent.has(id))) continue;
        found = again;
      }
      const { ranked } = scored;
      const last = ranked[query.limit - 1];
      if (
        last === undefined
          ? found.settles === Number.NEGATIVE_INFINITY
          : last.score > found.settles + SCORE_MARGIN
      ) {
        return ranked;
      }
      const next = await this.deeper(pool, cache, found.ids, ranked.length, query.limit, depth);
      if (next === null) break;
      depth = next;
    }
    return inSql();
  }
  searchVector: MemoryStore['searchVector'] = (query) =>
    this.options.vectorIndex === 'sql' || query.filters.threadId !== undefined
      ? this.read((s) => queries.searchVector(s, query, this.pgvector))
      : this.searchVectorInMemory(query);

  /**
   * `searchVectorFromCache`, tracked as a whole: its statements run one after another, and
   * `close()` lets the search finish rather than fail its next statement.
   */
  private searchVectorInMemory(query: VectorQuery): Promise<ScoredRecord[]> {
    return this.onPool((pool) => this.searchVectorFromCache(pool, query));
  }

  /**
   * Finds the candidates on the vector cache, then has PostgreSQL check
   * their visibility and filters, and scores them, with the records written
   * since the cache's snapshot, as the full query would.
   * When too few of them pass to prove the top (a caller who sees little of
   * the store, a filter most records fail, deleted records still cached),
   * the deleted ones are dropped, or else the codes are asked for as many
   * more candidates as the share that passed suggests, and searched again;
   * when the codes cannot tell, none passed, or after a few tries, the full
   * query answers, as it does while the cache loads (see
   * `FollowedCache.fresh`). A search within a thread goes to the full query
   * at once: the thread index serves it.
   */
  private async searchVectorFromCache(
    pool: PostgresPool,
    query: VectorQuery,
  ): Promise<ScoredRecord[]> {
    const inSql = () => this.readOn(pool, (s) => queries.searchVector(s, query, this.pgvector));
    const cache = await this.vectors.fresh(pool);
    if (cache === null) return inSql();
    let depth = query.limit;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const found = cache.candidates(query.visibility, query.vector, depth);
      const from = cache.position;
      if (found === null || from === null) break;
      const ranked = await this.readOn(pool, (s) =>
        scoreVectorCandidates(s, query, found.ids, from),
      );
      const last = ranked[query.limit - 1];
      if (
        last === undefined
          ? found.settles === Number.NEGATIVE_INFINITY
          : last.score >= found.settles
      ) {
        return ranked.slice(0, query.limit);
      }
      const next = await this.deeper(pool, cache, found.ids, ranked.length, query.limit, depth);
      if (next === null) break;
      depth = next;
    }
    return inSql();
  }

  /**
   * The depth of a cache's next try after candidates (`ids`, of which `passed` came back
   * from SQL) that did not prove the top: the same, once those found deleted are dropped
   * from the cache; else enough candidates for twice `limit` to pass at the share that
   * passed this time; null when none passed (the search goes to SQL).
   */
  private async deeper(
    pool: PostgresPool,
    cache: CachedRecords,
    ids: readonly string[],
    passed: number,
    limit: number,
    depth: number,
  ): Promise<number | null> {
    const version = cache.version;
    const gone = await this.readOn(pool, (s) => goneRecords(s, ids));
    if (gone.length > 0) {
      cache.drop(gone, version);
      return depth;
    }
    if (passed === 0) return null;
    return Math.max(2 * depth, Math.ceil((2 * limit * ids.length) / passed));
  }

  findPlanCandidates: MemoryStore['findPlanCandidates'] = (query) =>
    this.read((s) => planQueries.findPlanCandidates(s, query));
  readAudit: MemoryStore['readAudit'] = (page) => this.read((s) => queries.readAudit(s, page));
  auditHeads: MemoryStore['auditHeads'] = () => this.read((s) => queries.auditHeads(s));
  embeddingDimensions: MemoryStore['embeddingDimensions'] = async () => {
    if (this.dimensions !== null) return this.dimensions;
    const size = await this.read((s) => queries.embeddingDimensions(s));
    this.dimensions ??= size;
    return size;
  };
  scanRecords: MemoryStore['scanRecords'] = (page) =>
    this.read((s) => queries.scanRecords(s, page));
  listGrants: MemoryStore['listGrants'] = (recordIds) =>
    this.read((s) => queries.listGrants(s, recordIds));

  listPlanStats: MemoryStore['listPlanStats'] = (planIds) =>
    this.read((s) => planQueries.listPlanStats(s, planIds));
}

/**
 * Throws `STORE_UNAVAILABLE` on a standby: every write, and every recall
 * unless read auditing is off, needs the primary, and a cache cannot load
 * there (the run's token is in an unlogged table, which a standby cannot
 * read). With `createSchema: false` nothing else in `init()` would stop it.
 */
async function refuseStandby(s: Session): Promise<void> {
  const [row] = await s.all('SELECT pg_is_in_recovery() AS standby');
  if (row?.standby === true) {
    throw new MnemoError(
      'STORE_UNAVAILABLE',
      'PostgreSQL: the server is a standby (in recovery), which takes no writes: connect to the primary',
    );
  }
}

/** Runs `fn` holding the session-level advisory lock named `name` (in every process). */
async function withAdvisoryLock<T>(s: Session, name: string, fn: () => Promise<T>): Promise<T> {
  const lock = new Params();
  await s.all(`SELECT pg_advisory_lock(hashtextextended(${lock.add(name, '::text')}, 0))`, lock);
  try {
    return await fn();
  } finally {
    const unlock = new Params();
    await s.all(
      `SELECT pg_advisory_unlock(hashtextextended(${unlock.add(name, '::text')}, 0))`,
      unlock,
    );
  }
}

/**
 * The error a transaction failed with: that of the first statement sent
 * without waiting (see `transactionOn`) that failed on its own, else `error`.
 * Once a statement fails, the server refuses every later one of the
 * transaction (SQLSTATE 25P02), which says nothing of why.
 */
async function firstFailure(unanswered: readonly Promise<unknown>[], error: unknown) {
  for (const reply of await Promise.allSettled(unanswered)) {
    if (reply.status === 'fulfilled') continue;
    const failure: unknown = reply.reason;
    if (!MnemoError.isInstance(failure) || failure.details.sqlstate !== '25P02') return failure;
  }
  return error;
}

/**
 * `seen`: the embedding size this transaction saw, and the accesses it
 * logged; the store takes both in once the transaction commits.
 * `heads`: the heads this process knows (null: expect none), the chains
 * whose head this transaction expected, those whose expected head turned out
 * stale in this call (read from then on), and the heads it advanced (known
 * once it commits).
 * `unanswered`: the replies of the statements sent without waiting for them,
 * which the transaction awaits before it reports a commit.
 */
function transactionOn(
  s: Session,
  pgvector: boolean,
  seen: { dimensions: number | null; accesses: number },
  heads: {
    known: ChainHeads | null;
    checked: Set<string>;
    stale: Set<string>;
    advanced: Map<string, AuditHead>;
  },
  begun: Promise<void>,
  unanswered: Promise<unknown>[],
): StoreTx {
  // Every call but the dedup lookup sends its statements once BEGIN has succeeded (see
  // `attempt`), so that none of them can run outside the transaction.
  const tx = s.after(begun);
  // A call whose statements nothing later in the transaction reads returns once they are
  // queued: the next goes out behind them (pipeline mode) without a round trip for their
  // replies. A write's records and audit events, and a recall's accesses, are such
  // statements; a failure among them fails the transaction (see `attempt`).
  let inserted = false;
  const unawaited = (reply: Promise<unknown>): Promise<void> => {
    reply.catch(() => undefined);
    unanswered.push(reply);
    return Promise.resolve();
  };
  return {
    // What a transaction reads it may go on to change (forget, share): the records are locked
    // first, then read by a statement that starts after the locks are held, so it sees what
    // any writer that held them committed (a record forgotten meanwhile is gone).
    get: async (visibility, ids) => {
      await queries.lockRecords(tx, ids);
      return queries.getRecords(tx, visibility, ids);
    },
    list: async (query) => {
      const found = await queries.listRecords(tx, query);
      const ids = found.map((visible) => visible.record.id);
      await queries.lockRecords(tx, ids);
      const now = new Map(
        (await queries.getRecords(tx, query.visibility, ids)).map((v) => [v.record.id, v]),
      );
      return found.flatMap((visible) => now.get(visible.record.id) ?? []);
    },
    // Ahead of BEGIN's reply when it is the transaction's first call (a remember's); behind
    // the transaction's own inserts otherwise, so that it finds them.
    findLiveDuplicates: (dedupKeys, now) =>
      queries.findLiveDuplicates(inserted ? tx : s, dedupKeys, now, begun),
    embeddingDimensions: async () => {
      seen.dimensions ??= await queries.embeddingDimensions(tx);
      return seen.dimensions;
    },
    fixEmbeddingDimensions: async (size) => {
      seen.dimensions ??= await queries.fixEmbeddingDimensions(tx, size);
      return seen.dimensions;
    },
    findIds: (ids) => queries.findIds(tx, ids),
    insertRecords: (records) => {
      inserted ||= records.length > 0;
      return unawaited(queries.insertRecords(tx, records, pgvector));
    },
    deleteRecords: (ids, mode, at) => queries.deleteRecords(tx, ids, mode, at),
    redactRecords: (ids, content, at) => queries.redactRecords(tx, ids, content, at),
    putGrants: (grants) => queries.putGrants(tx, grants),
    touch: (ids, at) => {
      seen.accesses += ids.length;
      return unawaited(logAccesses(tx, ids, at));
    },
    lockPlanStats: (planId) => planQueries.lockPlanStats(tx, planId),
    putPlanStats: (stats) => planQueries.putPlanStats(tx, stats),
    auditHead: async (chain) => {
      const advanced = heads.advanced.get(chain);
      if (advanced !== undefined) return advanced;
      const { known } = heads;
      // A run again after a stale head reads it, whatever other transactions of this process
      // committed meanwhile.
      const expected = heads.stale.has(chain) ? undefined : known?.expected(chain);
      if (known === null || expected === undefined) return queries.lockAuditHead(tx, chain);
      heads.checked.add(chain);
      await unawaited(
        queries.lockExpectedAuditHead(tx, expected).catch((error: unknown) => {
          if (
            MnemoError.isInstance(error) &&
            error.details.sqlstate === queries.STALE_HEAD_SQLSTATE
          ) {
            heads.stale.add(chain);
            known.stale(chain);
          }
          throw error;
        }),
      );
      return expected;
    },
    appendAudit: (events) => {
      for (const { chain, seq, hash } of events) heads.advanced.set(chain, { chain, seq, hash });
      return unawaited(queries.appendAudit(tx, events));
    },
  };
}
