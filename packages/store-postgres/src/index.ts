export type {
  PostgresClient,
  PostgresPool,
  PostgresQueryConfig,
  PostgresQueryResult,
} from './pool.js';
export { createPostgresStore, type PostgresStoreOptions } from './postgres-store.js';
