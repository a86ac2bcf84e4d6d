import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Builds every package once before the tests. Most tests run on sources, but
 * the demo's CLI test runs the built program and the pack test packs `dist`;
 * one build here keeps them from rebuilding the same files concurrently.
 */
export default function setup(): void {
  const root = import.meta.dirname;
  const result = spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-b'],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  if (result.status !== 0) throw new Error(`tsc -b failed:\n${result.stdout}${result.stderr}`);
}
