export { createDuckDBStore, type DuckDBStoreOptions } from './duckdb-store.js';
