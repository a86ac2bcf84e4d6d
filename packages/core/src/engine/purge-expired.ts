import { appendOwnersEntries } from '../audit/append-audit.js';
import type { MemoryRecord } from '../records.js';
import { validatePageSize } from '../validation.js';
import type { EngineContext } from './engine-context.js';

export interface PurgeResult {
  /** Records forgotten for good. */
  purged: number;
}

/**
 * Forgets for good every record whose expiry has passed at the engine clock's
 * now, whatever its owner or state (plans included): what a TTL means for
 * storage, since expired records only stop being read. Reads the records page
 * by page, and deletes each page's expired ones in one transaction with one
 * `forget` event (`mode: 'hard'`, `expired: true`) in each owner's chain, so
 * `verifyRecords` accounts for them. Operator-level, like `exportRecords`.
 */
export async function purgeExpired(
  context: EngineContext,
  pageSizeOption?: number,
): Promise<PurgeResult> {
  const pageSize = validatePageSize(pageSizeOption, 500);
  const now = context.clock.now();
  let purged = 0;
  let afterId: string | undefined;
  for (;;) {
    const page = await context.store.scanRecords(
      afterId === undefined ? { limit: pageSize } : { afterId, limit: pageSize },
    );
    const expired = page.filter(
      (record) => record.expiresAt !== null && record.expiresAt.getTime() <= now.getTime(),
    );
    if (expired.length > 0) purged += await purgePage(context, expired, now);
    const last = page.at(-1);
    if (page.length < pageSize || last === undefined) return { purged };
    afterId = last.id;
  }
}

async function purgePage(
  context: EngineContext,
  expired: readonly MemoryRecord[],
  now: Date,
): Promise<number> {
  return context.store.transaction(async (tx) => {
    // A forget or another purge may have removed some since the page was read.
    const present = new Set(await tx.findIds(expired.map((record) => record.id)));
    const targets = expired.filter((record) => present.has(record.id));
    if (targets.length === 0) return 0;
    // In id order, as scanRecords returned them.
    await tx.deleteRecords(
      targets.map((record) => record.id),
      'hard',
      now,
    );
    await appendOwnersEntries(tx, context.ids, targets, now, (owned) => [
      {
        op: 'forget',
        recordIds: owned.map((record) => record.id),
        details: {
          mode: 'hard',
          expired: true,
          contentHashes: owned.map((record) => record.contentHash),
        },
      },
    ]);
    return targets.length;
  });
}
