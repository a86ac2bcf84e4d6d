import { UsageError } from './usage-error.js';

/** The schema the demo uses on PostgreSQL unless `--pg-schema` names another. */
export const DEFAULT_PG_SCHEMA = 'mnemo_demo';

/** Where the demo keeps its memory: a DuckDB file (or `:memory:`), or a schema of a PostgreSQL database. */
export type StoreSpec =
  | { kind: 'duckdb'; path: string }
  | { kind: 'postgres'; url: string; schema: string };

// What `@mnemo/store-postgres` accepts as a schema name; `pg_` names are reserved by PostgreSQL.
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;
const POSTGRES_PROTOCOLS = new Set(['postgres:', 'postgresql:']);
const MASK = '***';

/**
 * Parses the value of `--store`: `duckdb:<file>` (a path or `:memory:`) or
 * `postgres:<url>` (a `postgres://` or `postgresql://` URL), with `schema` for
 * PostgreSQL. Throws `UsageError`; its messages never repeat a URL, which may
 * hold a password.
 */
export function parseStoreSpec(text: string, schema: string = DEFAULT_PG_SCHEMA): StoreSpec {
  if (text.trim() === '') throw new UsageError('--store must not be empty');
  const colon = text.indexOf(':');
  if (colon <= 0) {
    throw new UsageError(`--store must be duckdb:<file> or postgres:<url>, got '${text}'`);
  }
  const kind = text.slice(0, colon);
  const rest = text.slice(colon + 1);
  switch (kind) {
    case 'duckdb':
      if (rest.trim() === '') {
        throw new UsageError('--store duckdb:<file> needs a file name or :memory:');
      }
      return { kind: 'duckdb', path: rest };
    case 'postgres':
      if (rest.trim() === '') {
        throw new UsageError(
          '--store postgres:<url> needs a URL, e.g. postgres:postgres://user:password@127.0.0.1:5432/db',
        );
      }
      if (!isPostgresUrl(rest)) {
        throw new UsageError(
          '--store postgres:<url>: the URL is not a valid postgres:// or postgresql:// URL ' +
            '(e.g. postgres:postgres://user:password@127.0.0.1:5432/db)',
        );
      }
      return { kind: 'postgres', url: rest, schema: pgSchema(schema) };
    default:
      throw new UsageError(
        `--store: unknown store '${kind}' (expected duckdb:<file> or postgres:<url>)`,
      );
  }
}

function isPostgresUrl(text: string): boolean {
  try {
    return POSTGRES_PROTOCOLS.has(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** Validates a `--pg-schema` name. Throws `UsageError`. */
export function pgSchema(name: string): string {
  if (!SCHEMA_PATTERN.test(name) || name.startsWith('pg_')) {
    throw new UsageError(
      `--pg-schema must be 1-63 characters of a-z 0-9 _, not starting with a digit or pg_, got '${name}'`,
    );
  }
  return name;
}

/** `url` with its password (in the user info or a `password` parameter) replaced by `***`. */
export function maskUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return MASK;
  }
  if (parsed.password !== '') parsed.password = MASK;
  if (parsed.searchParams.has('password')) parsed.searchParams.set('password', MASK);
  return parsed.href;
}

/** The store for people: `DuckDB <path>` or `PostgreSQL <url without the password>, schema <name>`. */
export function describeStore(spec: StoreSpec): string {
  return spec.kind === 'duckdb'
    ? `DuckDB ${spec.path}`
    : `PostgreSQL ${maskUrl(spec.url)}, schema ${spec.schema}`;
}

/** `text` with every trace of the store's password masked (in case a driver message quotes it). */
export function redactSecrets(text: string, spec: StoreSpec | undefined): string {
  if (spec?.kind !== 'postgres') return text;
  let redacted = text.split(spec.url).join(maskUrl(spec.url));
  for (const secret of passwords(spec.url)) redacted = redacted.split(secret).join(MASK);
  return redacted;
}

function passwords(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const raw = [parsed.password, parsed.searchParams.get('password') ?? ''];
  const all = raw.flatMap((value) => [value, safeDecode(value)]);
  // Very short passwords would mask ordinary words of a message; they cannot be told apart.
  return [...new Set(all)].filter((value) => value.length >= 4);
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
