export type { PostgresClient, PostgresPool, PostgresQueryResult } from './pool.js';
export { createPostgresStore, type PostgresStoreOptions } from './postgres-store.js';
