import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { type AuditEvent, MnemoError, type NewRecord } from '@mnemo/core';

/**
 * Writes acknowledged ahead of DuckDB: the records, accesses and audit events
 * of one transaction, applied to the file later, several frames in one
 * DuckDB transaction. `seq` grows by one per frame, across restarts.
 */
export interface JournalFrame {
  readonly seq: number;
  readonly records: readonly NewRecord[];
  readonly accesses: readonly JournaledTouch[];
  readonly events: readonly AuditEvent[];
}

/** A recall's accesses: one to each of `ids` (distinct) at `at`, as touch number `touch` (see AccessLog). */
export interface JournaledTouch {
  readonly ids: readonly string[];
  readonly at: Date;
  readonly touch: number;
}

// A frame on disk: payload length (u32), the first 8 bytes of its SHA-256, the JSON payload.
const HEADER = 12;

/**
 * An append-only file of frames beside the database file. `append` returns
 * once the frame is on disk (`fdatasync`): that is what acknowledges a write.
 * Reading stops at the first frame that is short or fails its checksum (a
 * write a crash cut off, never acknowledged), and cuts it off the file so
 * that later frames follow the last whole one.
 */
export class Journal {
  private constructor(
    readonly path: string,
    private readonly fd: number,
    // Bytes of whole frames in the file: where the next frame starts.
    private size: number,
  ) {}

  /** Opens (or creates) the journal at `path`; returns it with the whole frames it holds. */
  static open(path: string): { journal: Journal; frames: JournalFrame[] } {
    const created = !existsSync(path);
    const fd = openSync(path, 'a+');
    try {
      if (created) syncFolder(path);
      const bytes = readFileSync(fd);
      const frames: JournalFrame[] = [];
      let offset = 0;
      while (offset + HEADER <= bytes.length) {
        const length = bytes.readUInt32LE(offset);
        const end = offset + HEADER + length;
        if (end > bytes.length) break;
        const payload = bytes.subarray(offset + HEADER, end);
        if (!checksum(payload).equals(bytes.subarray(offset + 4, offset + HEADER))) break;
        frames.push(decodeFrame(payload.toString('utf8')));
        offset = end;
      }
      if (offset < bytes.length) {
        ftruncateSync(fd, offset);
        fdatasyncSync(fd);
      }
      return { journal: new Journal(path, fd, offset), frames };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** Appends `frame` and returns once it is durable. On failure the file is as it was. */
  append(frame: JournalFrame): void {
    const payload = Buffer.from(encodeFrame(frame), 'utf8');
    const bytes = Buffer.allocUnsafe(HEADER + payload.length);
    bytes.writeUInt32LE(payload.length, 0);
    checksum(payload).copy(bytes, 4);
    payload.copy(bytes, HEADER);
    try {
      let written = 0;
      while (written < bytes.length) {
        written += writeSync(this.fd, bytes, written, bytes.length - written);
      }
      fdatasyncSync(this.fd);
    } catch (error) {
      // Cut off what part of the frame reached the file, so that the next frame follows the
      // last whole one; if even that fails, the file ends in a frame reading will stop at.
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // Reported below.
      }
      throw new MnemoError(
        'STORE_UNAVAILABLE',
        `DuckDB: writing the journal ${this.path} failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
    this.size += bytes.length;
  }

  /** Empties the journal once every frame in it is in the database file. */
  clear(): void {
    if (this.size === 0) return;
    ftruncateSync(this.fd, 0);
    fdatasyncSync(this.fd);
    this.size = 0;
  }

  /** Closes the file; removes it when `remove` and it is empty. */
  close(remove: boolean): void {
    closeSync(this.fd);
    if (remove && this.size === 0) unlinkSync(this.path);
  }
}

const checksum = (payload: Buffer): Buffer =>
  createHash('sha256').update(payload).digest().subarray(0, 8);

/** Makes a new file's name durable: fsync of its folder. */
function syncFolder(path: string): void {
  const fd = openSync(dirname(path), 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const time = (date: Date | null): number | null => (date === null ? null : date.getTime());
const date = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

function encodeFrame(frame: JournalFrame): string {
  return JSON.stringify({
    seq: frame.seq,
    records: frame.records.map((item) => ({
      ...item,
      record: {
        ...item.record,
        embedding:
          item.record.embedding === null
            ? null
            : Buffer.from(
                item.record.embedding.buffer,
                item.record.embedding.byteOffset,
                item.record.embedding.byteLength,
              ).toString('base64'),
        createdAt: time(item.record.createdAt),
        updatedAt: time(item.record.updatedAt),
        expiresAt: time(item.record.expiresAt),
        deletedAt: time(item.record.deletedAt),
        lastAccessedAt: time(item.record.lastAccessedAt),
      },
    })),
    accesses: frame.accesses.map((access) => ({ ...access, at: time(access.at) })),
    events: frame.events.map((event) => ({ ...event, at: time(event.at) })),
  });
}

function decodeFrame(text: string): JournalFrame {
  const raw = JSON.parse(text);
  return {
    seq: raw.seq,
    records: raw.records.map((item: { record: Record<string, unknown> }) => {
      const { record } = item;
      const embedding = record.embedding as string | null;
      let vector: Float32Array | null = null;
      if (embedding !== null) {
        const bytes = Buffer.from(embedding, 'base64');
        // Copied into a buffer of its own: a Float32Array needs a 4-byte-aligned offset.
        vector = new Float32Array(new Uint8Array(bytes).buffer);
      }
      return {
        ...item,
        record: {
          ...record,
          embedding: vector,
          createdAt: date(record.createdAt as number),
          updatedAt: date(record.updatedAt as number),
          expiresAt: date(record.expiresAt as number | null),
          deletedAt: date(record.deletedAt as number | null),
          lastAccessedAt: date(record.lastAccessedAt as number | null),
        },
      };
    }),
    // A journal written before accesses were journaled has none.
    accesses: (raw.accesses ?? []).map((access: JournaledTouch & { at: number }) => ({
      ...access,
      at: new Date(access.at),
    })),
    events: raw.events.map((event: AuditEvent & { at: number }) => ({
      ...event,
      at: new Date(event.at),
    })),
  };
}
