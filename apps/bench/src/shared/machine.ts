import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import os from 'node:os';
import { resolve } from 'node:path';

/** The machine a benchmark ran on, as printed in its JSON line. */
export interface MachineInfo {
  cpuModel: string;
  /** Logical cores the process may use. */
  cores: number;
  /** Total memory in GiB, one decimal. */
  memoryGiB: number;
  node: string;
  platform: string;
  arch: string;
  osRelease: string;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism?.() ?? cpus.length,
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    osRelease: os.release(),
  };
}

/** A data file a benchmark read: absolute path, size in bytes, sha256 of its bytes. */
export interface DataFileInfo {
  path: string;
  bytes: number;
  sha256: string;
}

export async function dataFileInfo(path: string): Promise<DataFileInfo> {
  const absolute = resolve(path);
  const { size } = await stat(absolute);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(absolute)) hash.update(chunk as Buffer);
  return { path: absolute, bytes: size, sha256: hash.digest('hex') };
}
