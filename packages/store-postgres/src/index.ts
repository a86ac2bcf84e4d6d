export type {
  PostgresClient,
  PostgresPool,
  PostgresQueryConfig,
  PostgresQueryResult,
} from './pool.js';
export {
  createPostgresStore,
  type PostgresStoreOptions,
  type PostgresStoreSettings,
} from './postgres-store.js';
