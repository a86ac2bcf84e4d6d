import type { CachedRecords } from './cached-records.js';
import type { PostgresPool } from './pool.js';

/** How a `FollowedCache` makes, loads, refreshes, sweeps and ends its cache. */
export interface CacheFeed<C> {
  create(): C;
  /** Loads an empty cache from the table. */
  load(pool: PostgresPool, cache: C): Promise<void>;
  /** Brings the cache up to a new snapshot; false when it must be loaded anew (see `FeedPosition.run`). */
  refresh(pool: PostgresPool, cache: C): Promise<boolean>;
  /** The ids among `ids` of records that no longer exist or are deleted (see `goneRecords`). */
  gone(pool: PostgresPool, ids: readonly string[]): Promise<string[]>;
  close(cache: C): void;
}

/**
 * A cache of the records table (VectorCache, LexicalCache) in this process:
 * loaded by the first search that needs it, brought up to date before each
 * search (see `fresh`), and swept of deleted records after the refreshes
 * that took in enough new ones (see `CachedRecords.sweep`).
 */
export class FollowedCache<C extends CachedRecords> {
  /** The cache once its first load has started. */
  private loading: Promise<C> | null = null;
  /** The refresh running, and the one queued behind it. */
  private refreshing: Promise<C> | null = null;
  private nextRefresh: Promise<C> | null = null;
  /** The sweep running, in the background: one at a time. */
  private sweeping: Promise<void> | null = null;

  constructor(private readonly feed: CacheFeed<C>) {}

  /** The cache, loaded by the first call, on `pool`. */
  private loaded(pool: PostgresPool): Promise<C> {
    if (this.loading === null) {
      const cache = this.feed.create();
      this.loading = this.feed
        .load(pool, cache)
        .then(() => cache)
        .catch((error) => {
          this.feed.close(cache);
          this.loading = null;
          throw error;
        });
    }
    return this.loading;
  }

  /**
   * The cache, brought up to a snapshot taken after this call: a refresh
   * running already may have taken its snapshot before a write the caller
   * saw commit, so the caller waits for the next one, which every caller
   * arriving meanwhile shares. When the cache's position belongs to another
   * run of the transaction ids (see `FeedPosition.run`: a restart, a crash,
   * a restore), the cache is loaded anew.
   */
  fresh(pool: PostgresPool): Promise<C> {
    if (this.refreshing === null) {
      const run = this.loaded(pool).then(async (cache) => {
        if (await this.feed.refresh(pool, cache)) {
          this.sweepWhenDue(pool, cache);
          return cache;
        }
        this.loading = null;
        this.feed.close(cache);
        return this.loaded(pool);
      });
      this.refreshing = run.finally(() => {
        this.refreshing = null;
      });
      return this.refreshing;
    }
    this.nextRefresh ??= this.refreshing
      .catch(() => undefined)
      .then(() => {
        this.nextRefresh = null;
        return this.fresh(pool);
      });
    return this.nextRefresh;
  }

  /**
   * Starts the cache's sweep when one is due and none is running, without
   * making the search wait: drops the records found deleted. A sweep that
   * fails (the server gone, say) drops nothing; the next goes on.
   */
  private sweepWhenDue(pool: PostgresPool, cache: C): void {
    if (this.sweeping !== null) return;
    const due = cache.sweep();
    if (due === null) return;
    this.sweeping = this.feed
      .gone(pool, due.ids)
      .then(
        (gone) => cache.drop(gone, due.version),
        () => undefined,
      )
      .finally(() => {
        this.sweeping = null;
      });
  }

  /**
   * Ends the cache, once its load and sweep have settled, and lets it go (a
   * closed store keeps none).
   */
  async close(): Promise<void> {
    const cache = await this.loading?.catch(() => null);
    await this.sweeping;
    this.loading = null;
    if (cache !== undefined && cache !== null) this.feed.close(cache);
  }
}
