import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/**
 * Gives each test of the calling file a fresh temporary folder, `file(name)`
 * being a path in it. After each test the steps pushed on `cleanup` run, last
 * first (closing stores, killing processes that hold a file), then the
 * folder goes.
 */
export function useTempFolder(prefix: string): {
  file: (name: string) => string;
  cleanup: (() => unknown)[];
} {
  let folder = '';
  const cleanup: (() => unknown)[] = [];
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
    rmSync(folder, { recursive: true, force: true });
  });
  return { file: (name) => join(folder, name), cleanup };
}
