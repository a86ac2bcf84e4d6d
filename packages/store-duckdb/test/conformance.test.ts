import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformanceSuite } from '@mnemo/core/testing';
import * as vitest from 'vitest';
import { createDuckDBStore } from '../src/index.js';
import { runOnFile } from './raw-file.js';
import { tamperStatements } from './tamper.js';

// Postings sorted into a run after every write, so every case runs on the term-ordered
// table and its merges; the file store below keeps them in write order (the default run
// size is never reached by a test). This one searches in SQL only, the file store on the
// in-memory lexical index (the default), so the suite proves both.
runConformanceSuite(vitest, {
  name: 'duckdb :memory:, postings sorted after each write, lexical search in SQL',
  createStore: () =>
    createDuckDBStore({ path: ':memory:', postingsRunSize: 1, searchIndex: 'sql' }),
});

const folders = new WeakMap<object, string>();
runConformanceSuite(vitest, {
  name: 'duckdb file',
  createStore: () => {
    const folder = mkdtempSync(join(tmpdir(), 'mnemo-duckdb-'));
    const store = createDuckDBStore({ path: join(folder, 'mnemo.duckdb') });
    folders.set(store, folder);
    return store;
  },
  destroyStore: (store) => rmSync(folders.get(store) as string, { recursive: true, force: true }),
  // Close the file, attack it as anyone with the file could, and reopen it.
  tamper: async (store, attack) => {
    const folder = folders.get(store) as string;
    const path = join(folder, 'mnemo.duckdb');
    await store.close();
    await runOnFile(path, tamperStatements(attack));
    const reopened = createDuckDBStore({ path });
    await reopened.init();
    return reopened;
  },
});
