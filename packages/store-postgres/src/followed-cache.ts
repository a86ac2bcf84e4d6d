import type { CachedRecords } from './cached-records.js';
import type { PostgresPool } from './pool.js';

/** How a `FollowedCache` makes, loads, refreshes, sweeps and ends its cache. */
export interface CacheFeed<C> {
  create(): C;
  /** Loads an empty cache from the table; stops early, the cache unusable, once `stopped()`. */
  load(pool: PostgresPool, cache: C, stopped: () => boolean): Promise<void>;
  /** Brings the cache up to a new snapshot; false when it must be loaded anew (see `FeedPosition.run`). */
  refresh(pool: PostgresPool, cache: C): Promise<boolean>;
  /** The ids among `ids` of records that no longer exist or are deleted (see `goneRecords`). */
  gone(pool: PostgresPool, ids: readonly string[]): Promise<string[]>;
  close(cache: C): void;
}

/**
 * A cache of the records table (VectorCache, LexicalCache) in this process:
 * loaded in the background from the first search that would use it (or
 * `load`), searches answering in SQL until it is; then brought up to date
 * before each search (see `fresh`), and swept of deleted records after the
 * refreshes that took in enough new ones (see `CachedRecords.sweep`).
 */
export class FollowedCache<C extends CachedRecords> {
  /** The load running or done, of the cache in use or to be. */
  private loading: Promise<C> | null = null;
  /** The cache once loaded, until a run's change sets it aside. */
  private ready: C | null = null;
  /** The refresh running, and the one queued behind it. */
  private refreshing: Promise<C | null> | null = null;
  private nextRefresh: Promise<C | null> | null = null;
  /** The sweep running, in the background: one at a time. */
  private sweeping: Promise<void> | null = null;
  /** Set by `close`: a load running stops at its next page. */
  private closing = false;

  constructor(private readonly feed: CacheFeed<C>) {}

  /**
   * Loads the cache on `pool` unless a load is running or done; a load that
   * fails drops its cache, and the next call starts another.
   */
  load(pool: PostgresPool): Promise<C> {
    if (this.loading === null) {
      const cache = this.feed.create();
      const loading = this.feed
        .load(pool, cache, () => this.closing)
        .then(
          () => {
            if (this.loading === loading && !this.closing) this.ready = cache;
            return cache;
          },
          (error) => {
            this.feed.close(cache);
            if (this.loading === loading) this.loading = null;
            throw error;
          },
        );
      this.loading = loading;
    }
    return this.loading;
  }

  /**
   * The cache, brought up to a snapshot taken after this call; null at once
   * while it is not loaded, the load then started in the background, and
   * null also when the refresh finds it must be loaded anew: the caller then
   * searches in SQL, which answers the same, rather than wait seconds.
   *
   * A refresh running already may have taken its snapshot before a write the
   * caller saw commit, so the caller waits for the next one, which every
   * caller arriving meanwhile shares. When the cache's position belongs to
   * another run of the transaction ids (see `FeedPosition.run`: a restart, a
   * crash, a restore), the cache is set aside and loaded anew.
   */
  fresh(pool: PostgresPool): Promise<C | null> | null {
    const cache = this.ready;
    if (cache === null) {
      this.load(pool).catch(() => undefined);
      return null;
    }
    if (this.refreshing === null) {
      const run = this.feed.refresh(pool, cache).then((current) => {
        if (current) {
          this.sweepWhenDue(pool, cache);
          return cache;
        }
        if (this.ready === cache) {
          this.ready = null;
          this.loading = null;
          this.feed.close(cache);
        }
        return this.fresh(pool);
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
   * Ends the cache, once its load (stopped at its next page) and sweep have
   * settled, and lets it go (a closed store keeps none).
   */
  async close(): Promise<void> {
    this.closing = true;
    const cache = await this.loading?.catch(() => null);
    await this.sweeping;
    this.loading = null;
    this.ready = null;
    if (cache !== undefined && cache !== null) this.feed.close(cache);
  }
}
