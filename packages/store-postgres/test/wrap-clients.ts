import type { PostgresClient, PostgresPool } from '../src/pool.js';

type Query = PostgresClient['query'];

/**
 * `inner`, whose clients (the connections transactions hold) answer `query`
 * through `wrap`; `text` names a statement by its first words, schema left out.
 */
export function wrapClients(
  inner: PostgresPool,
  wrap: (client: PostgresClient, text: (config: Parameters<Query>[0]) => string) => Query,
): PostgresPool {
  const text = (config: Parameters<Query>[0]) =>
    (typeof config === 'string' ? config : config.text)
      .replace(/"[^"]+"\./g, '')
      .trim()
      .split(/[\s(]+/)
      .slice(0, 3)
      .join(' ')
      .replace(/^(BEGIN|COMMIT|ROLLBACK).*/, '$1');
  return {
    query: (config, values) => inner.query(config, values),
    end: () => inner.end(),
    connect: async () => {
      const client = await inner.connect();
      return {
        pipeline: client.pipeline,
        query: wrap(client, text),
        release: (error) => client.release(error),
        on: (event, listener) => client.on?.(event, listener),
        off: (event, listener) => client.off?.(event, listener),
      };
    },
  };
}
