import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import type { Chunk } from './chunk.js';
import { chunkMarkdown } from './chunk-markdown.js';
import { chunkPlainText } from './chunk-text.js';
import { DEMO_PATHS } from './paths.js';
import { UsageError } from './usage-error.js';

/** A document of the corpus. */
export interface CorpusFile {
  /** Path relative to the corpus root, with `/` separators. */
  path: string;
  text: string;
}

const EXTENSIONS = new Set(['.md', '.txt']);
const SKIPPED_NAMES = new Set(['CHANGELOG.md']);

/**
 * The default corpus: the repository's own documentation (the root README.md,
 * each package README.md under packages/, apps/demo/README.md) plus the documents in
 * apps/demo/corpus. Paths are relative to the repository root; files that do
 * not exist are skipped.
 */
export async function loadDefaultCorpus(): Promise<CorpusFile[]> {
  const { repoRoot, demoDir, corpusDir } = DEMO_PATHS;
  const packages = await readdir(join(repoRoot, 'packages'), { withFileTypes: true }).catch(
    () => [],
  );
  const readmes = [
    join(repoRoot, 'README.md'),
    ...packages
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(repoRoot, 'packages', entry.name, 'README.md')),
    join(demoDir, 'README.md'),
  ];
  const paths = [
    ...readmes,
    ...(await findDocuments(corpusDir)).filter((path) => extname(path) === '.md'),
  ];
  const files: CorpusFile[] = [];
  for (const path of paths) {
    const text = await readFile(path, 'utf8').catch(() => null);
    if (text !== null) files.push({ path: toPosix(relative(repoRoot, path)), text });
  }
  return sortByPath(files);
}

/** Every .md and .txt file under `folder` (recursively, except CHANGELOG.md). Throws `UsageError`. */
export async function loadCorpusFolder(folder: string): Promise<CorpusFile[]> {
  const info = await stat(folder).catch(() => null);
  if (info === null) throw new UsageError(`--corpus: no such folder: ${folder}`);
  if (!info.isDirectory()) throw new UsageError(`--corpus: not a folder: ${folder}`);
  const paths = await findDocuments(folder);
  if (paths.length === 0) throw new UsageError(`--corpus: no .md or .txt files in ${folder}`);
  const files: CorpusFile[] = [];
  for (const path of paths) {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new UsageError(`--corpus: cannot read ${path}: ${(error as Error).message}`);
    }
    files.push({ path: toPosix(relative(folder, path)), text });
  }
  return sortByPath(files);
}

/** Chunks each file by its kind: Markdown by heading, plain text by paragraph. */
export function chunkCorpus(files: readonly CorpusFile[]): Chunk[] {
  return files.flatMap((file) =>
    extname(file.path) === '.md'
      ? chunkMarkdown(file.path, file.text)
      : chunkPlainText(file.path, file.text),
  );
}

// Recursive, skipping hidden folders and node_modules; symbolic links are not followed.
async function findDocuments(folder: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules') {
      found.push(...(await findDocuments(path)));
    } else if (
      entry.isFile() &&
      EXTENSIONS.has(extname(entry.name)) &&
      !SKIPPED_NAMES.has(entry.name)
    ) {
      found.push(path);
    }
  }
  return found;
}

function toPosix(path: string): string {
  return path.split(sep).join('/');
}

function sortByPath(files: CorpusFile[]): CorpusFile[] {
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
