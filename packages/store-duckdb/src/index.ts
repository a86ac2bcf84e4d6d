export { createDuckDBStore, type DuckDBStoreOptions, JOURNAL_SUFFIX } from './duckdb-store.js';
