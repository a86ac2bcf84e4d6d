import { fileURLToPath } from 'node:url';

// This file sits in src/ (tests) or dist/ (the built program): one level below the package folder.
const demoDir = fileURLToPath(new URL('..', import.meta.url));

/** Folders and files the demo ships with, resolved from this module, never from the cwd. */
export const DEMO_PATHS = Object.freeze({
  /** apps/demo */
  demoDir,
  /** The repository root (two levels above apps/demo). */
  repoRoot: fileURLToPath(new URL('../../..', import.meta.url)),
  /** The demo's own documents about mnemo, part of the default corpus. */
  corpusDir: fileURLToPath(new URL('../corpus', import.meta.url)),
  /** The default question stream. */
  queriesFile: fileURLToPath(new URL('../queries.txt', import.meta.url)),
});
