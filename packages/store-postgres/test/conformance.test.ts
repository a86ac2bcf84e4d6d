import type { MemoryStore } from '@mnemo/core';
import { runConformanceSuite } from '@mnemo/core/testing';
import * as vitest from 'vitest';
import { createPostgresStore } from '../src/index.js';
import {
  describePostgres,
  dropSchema,
  PG_URL,
  PGVECTOR_URL,
  queryOn,
  uniqueSchema,
} from './database.js';
import { tamperStatements } from './tamper.js';

const schemas = new WeakMap<MemoryStore, string>();

function suite(
  name: string,
  url: string | undefined,
  vector: 'array' | 'pgvector',
  index: 'memory' | 'sql' = 'memory',
): void {
  if (url === undefined) return;
  runConformanceSuite(vitest, {
    name,
    createStore: () => {
      const schema = uniqueSchema('conformance');
      const store = createPostgresStore({
        connectionString: url,
        schema,
        vector,
        vectorIndex: index,
        lexicalIndex: index,
        maxConnections: 4,
      });
      schemas.set(store, schema);
      return store;
    },
    destroyStore: (store) => dropSchema(schemas.get(store) as string, url),
    // Attack the tables over a connection of its own, as anyone with database access could.
    tamper: async (store, attack) => {
      for (const [sql, values] of tamperStatements(schemas.get(store) as string, attack)) {
        await queryOn(url, sql, values);
      }
      return store;
    },
  });
}

describePostgres('postgres', () => {
  suite('postgres (real[] vectors)', PG_URL, 'array');
  suite('postgres (pgvector)', PGVECTOR_URL, 'pgvector');
  // Vector and lexical searches answer from memory by default: once more searching in SQL.
  suite('postgres (pgvector, vector and lexical search in SQL)', PGVECTOR_URL, 'pgvector', 'sql');
});
