import type { PostgresPool } from './pool.js';

/** How a `FollowedCache` makes, loads, refreshes and ends its cache. */
export interface CacheFeed<C> {
  create(): C;
  /** Loads an empty cache from the table. */
  load(pool: PostgresPool, cache: C): Promise<void>;
  /** Brings the cache up to a new snapshot; false when it must be loaded anew (see `FeedPosition.run`). */
  refresh(pool: PostgresPool, cache: C): Promise<boolean>;
  close(cache: C): void;
}

/**
 * A cache of the records table (VectorCache, LexicalCache) in this process:
 * loaded by the first search that needs it, and brought up to date before
 * each search (see `fresh`).
 */
export class FollowedCache<C> {
  /** The cache once its first load has started. */
  private loading: Promise<C> | null = null;
  /** The refresh running, and the one queued behind it. */
  private refreshing: Promise<C> | null = null;
  private nextRefresh: Promise<C> | null = null;

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
        if (await this.feed.refresh(pool, cache)) return cache;
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

  /** Ends the cache, once its load has settled, and lets it go (a closed store keeps none). */
  async close(): Promise<void> {
    const cache = await this.loading?.catch(() => null);
    this.loading = null;
    if (cache !== undefined && cache !== null) this.feed.close(cache);
  }
}
