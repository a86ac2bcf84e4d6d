import type { AuditEvent, AuditHead, NewRecord, StoreTx } from '@mnemo/core';
import type { JournaledTouch, JournalFrame } from './journal.js';
import { addSmallestIds, PendingWrites } from './pending-writes.js';
import * as queries from './queries.js';
import type { RecordKeys } from './record-keys.js';
import type { Session } from './session.js';

export interface DeferredContext {
  /** The store's embedding size, or null while none is fixed (then fixing it moves onto the file). */
  readonly dimensions: number | null;
  /**
   * The dedup keys and ids of the file's records and the pending frames', or
   * null before the store has read them (then a remember moves onto the file).
   */
  readonly recordKeys: RecordKeys | null;
  /** What the journal holds and the file not yet. */
  readonly pending: PendingWrites;
  /** Chain heads as committed to the file. */
  readonly committedHeads: ReadonlyMap<string, AuditHead>;
  /** Most records one deferred transaction may insert. */
  readonly maxRecords: number;
  /** Runs a read on the file's committed state. */
  read<T>(fn: (s: Session) => Promise<T>): Promise<T>;
  /** The number of the next touch (see AccessLog.nextTouch). */
  nextTouch(): number;
  /**
   * Moves the transaction onto the file: a transaction there, after every
   * pending frame, holding `records`, `accesses` and `events` already.
   */
  onFile(
    records: readonly NewRecord[],
    accesses: readonly JournaledTouch[],
    events: readonly AuditEvent[],
  ): Promise<StoreTx>;
}

export interface DeferredTransaction {
  readonly tx: StoreTx;
  /** What the transaction wrote, in call order, while deferred. */
  readonly records: () => NewRecord[];
  readonly accesses: () => JournaledTouch[];
  readonly events: () => AuditEvent[];
}

/**
 * A transaction that reads the file's committed state plus the pending
 * frames plus its own writes, and records its writes instead of running
 * them, for the store to journal. It moves onto the file, with what it
 * wrote so far, at the first call that is not a remember's or a recall's
 * (forget, share, plan statistics and the reads they make), a remember's
 * before the store knows its records' keys, a write larger than
 * `maxRecords`, or a record id already taken (which the file then
 * reports); what it read before still holds there, as the file then has
 * every pending frame and nothing else can write meanwhile. So applying a
 * journaled frame cannot fail on a check the database makes.
 */
export function deferredTransaction(context: DeferredContext): DeferredTransaction {
  const { pending, recordKeys } = context;
  const own = new PendingWrites();
  const records = () => own.frames.flatMap((frame) => frame.records);
  const accesses = () => own.frames.flatMap((frame) => frame.accesses);
  const events = () => own.frames.flatMap((frame) => frame.events);
  const write = (frame: Omit<JournalFrame, 'seq'>) => own.add({ seq: 0, ...frame });
  let file: Promise<StoreTx> | null = null;
  const onFile = (): Promise<StoreTx> => {
    file ??= context.onFile(records(), accesses(), events());
    return file;
  };
  const tx: StoreTx = {
    get: async (visibility, ids) => (await onFile()).get(visibility, ids),
    list: async (query) => (await onFile()).list(query),
    findIds: async (ids) => (await onFile()).findIds(ids),
    deleteRecords: async (ids, mode, at) => (await onFile()).deleteRecords(ids, mode, at),
    redactRecords: async (ids, content, at) => (await onFile()).redactRecords(ids, content, at),
    lockPlanStats: async (planId) => (await onFile()).lockPlanStats(planId),
    putPlanStats: async (stats) => (await onFile()).putPlanStats(stats),
    putGrants: async (grants) => (await onFile()).putGrants(grants),
    touch: async (ids, at) => {
      if (file !== null) return (await file).touch(ids, at);
      write({
        records: [],
        accesses: [{ ids: [...new Set(ids)], at, touch: context.nextTouch() }],
        events: [],
      });
    },
    embeddingDimensions: async () =>
      file === null ? context.dimensions : (await file).embeddingDimensions(),
    fixEmbeddingDimensions: async (size) =>
      file === null && context.dimensions !== null
        ? context.dimensions
        : (await onFile()).fixEmbeddingDimensions(size),
    findLiveDuplicates: async (keys, now) => {
      if (file !== null || recordKeys === null)
        return (await onFile()).findLiveDuplicates(keys, now);
      const candidates = keys.filter((key) => recordKeys.mayHaveDedupKey(key));
      // The pending frames' answer first: a frame applied while the file is read leaves
      // them, and may have been applied after the read's snapshot, in neither otherwise.
      const found = pending.addLiveDuplicates(new Map(), candidates, now);
      if (candidates.length > 0) {
        const onFile = await context.read((s) => queries.findLiveDuplicates(s, candidates, now));
        addSmallestIds(found, onFile);
      }
      return own.addLiveDuplicates(found, keys, now);
    },
    insertRecords: async (inserted) => {
      if (file === null && recordKeys !== null && inserted.length > 0) {
        const ids = inserted.map(({ record }) => record.id);
        const known = ids.filter((id) => recordKeys.mayHaveId(id));
        const deferrable =
          own.records + inserted.length <= context.maxRecords &&
          new Set(ids).size === ids.length &&
          !ids.some((id) => own.hasId(id) || pending.hasId(id)) &&
          (known.length === 0 ||
            (await context.read((s) => queries.findIds(s, known))).length === 0);
        if (deferrable) {
          write({ records: inserted, accesses: [], events: [] });
          return;
        }
      }
      if (inserted.length > 0 || file !== null) await (await onFile()).insertRecords(inserted);
    },
    auditHead: async (chain) => {
      if (file !== null) return (await file).auditHead(chain);
      return (
        own.head(chain) ??
        pending.head(chain) ??
        context.committedHeads.get(chain) ??
        (await context.read((s) => queries.auditHead(s, chain)))
      );
    },
    appendAudit: async (appended) => {
      if (file !== null) return (await file).appendAudit(appended);
      write({ records: [], accesses: [], events: appended });
    },
  };
  return { tx, records, accesses, events };
}
