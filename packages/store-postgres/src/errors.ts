import { MnemoError } from '@mnemo/core';

// SQLSTATE classes and codes that mean "the database cannot serve us": not now, or not as
// configured (credentials, privileges, a read-only server).
const UNAVAILABLE_CODES = new Set([
  '57014', // query_canceled: statement_timeout
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
  '53100', // disk_full
  '53200', // out_of_memory
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
  '3D000', // invalid_catalog_name: no such database
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '42501', // insufficient_privilege: the role may not use the schema or database as configured
  '25006', // read_only_sql_transaction: a standby, or read-only sessions
]);
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
]);
// TLS: a server without it (pg's message, below), or a certificate Node does not trust: its
// OpenSSL verification codes (UNABLE_TO_…, …CERT…, …CRL…, INVALID_CA…) and its own ERR_TLS_ /
// ERR_SSL_.
const UNAVAILABLE_TLS =
  /^ERR_(TLS|SSL)_|^UNABLE_TO_|CERT|CRL|^(INVALID_CA|INVALID_PURPOSE|HOSTNAME_MISMATCH|PATH_LENGTH_EXCEEDED)$/;
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|terminating connection|server closed the connection|Query read timeout|server does not support SSL/i;

/** The one place `pg` errors become `MnemoError`s. */
export function mapPostgresError(error: unknown, action: string): MnemoError {
  if (MnemoError.isInstance(error)) return error;
  // Node reports a host with several addresses that all refused as an AggregateError with an
  // empty message: describe it by its first error.
  const e = (
    error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error
  ) as {
    code?: unknown;
    message?: unknown;
  };
  const code =
    typeof e?.code === 'string'
      ? e.code
      : typeof (error as { code?: unknown })?.code === 'string'
        ? String((error as { code: string }).code)
        : '';
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(error);
  if (
    UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') ||
    UNAVAILABLE_ERRNO.has(code) ||
    UNAVAILABLE_TLS.test(code) ||
    UNAVAILABLE_MESSAGE.test(message)
  ) {
    return new MnemoError('STORE_UNAVAILABLE', `PostgreSQL: ${action} failed: ${message}`, {
      cause: error,
      details: code === '' ? {} : { sqlstate: code },
    });
  }
  if (code === '42P01' || code === '3F000') {
    return new MnemoError(
      'STORE_UNAVAILABLE',
      `PostgreSQL: ${action} failed: the schema is missing; call init() first (${message})`,
      {
        cause: error,
        details: { sqlstate: code },
      },
    );
  }
  return new MnemoError('INTERNAL', `PostgreSQL: ${action} failed: ${message}`, {
    cause: error,
    details: code === '' ? {} : { sqlstate: code },
  });
}

export function storeClosed(): MnemoError {
  return new MnemoError(
    'STORE_UNAVAILABLE',
    'PostgreSQL store is not open: call init() first (or it was closed)',
  );
}
