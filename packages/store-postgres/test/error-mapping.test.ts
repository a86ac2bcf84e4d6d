import { MnemoError } from '@mnemo/core';
import { describe, expect, it } from 'vitest';
import { mapPostgresError, storeClosed } from '../src/errors.js';

/** What `mapPostgresError` makes of `error`: code, message and details. */
function mapped(error: unknown) {
  const result = mapPostgresError(error, 'testing');
  expect(MnemoError.isInstance(result)).toBe(true);
  return { code: result.code, message: result.message, details: result.details };
}

/** A driver error as `pg` makes them: a message and, from the server, a SQLSTATE code. */
function driverError(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('mapPostgresError', () => {
  it('makes every SQLSTATE of a server that cannot serve now STORE_UNAVAILABLE, with the code', () => {
    for (const sqlstate of [
      '57014',
      '57P01',
      '57P02',
      '57P03',
      '53300',
      '53100',
      '53200',
      '28000',
      '28P01',
      '3D000',
      '40001',
      '40P01',
      '55P03',
      '42501',
      '25006',
      // Class 08: connection exceptions.
      '08000',
      '08006',
      '08P01',
    ]) {
      expect([sqlstate, mapped(driverError('some failure', sqlstate))]).toEqual([
        sqlstate,
        {
          code: 'STORE_UNAVAILABLE',
          message: 'PostgreSQL: testing failed: some failure',
          details: { sqlstate },
        },
      ]);
    }
  });

  it('makes every network error STORE_UNAVAILABLE', () => {
    for (const errno of [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENOTFOUND',
      'EPIPE',
      'EAI_AGAIN',
    ]) {
      expect([errno, mapped(driverError(`connect ${errno}`, errno)).code]).toEqual([
        errno,
        'STORE_UNAVAILABLE',
      ]);
    }
  });

  it('makes a certificate Node does not trust STORE_UNAVAILABLE, with its code', () => {
    for (const code of [
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'CERT_HAS_EXPIRED',
      'CERT_NOT_YET_VALID',
      'CERT_UNTRUSTED',
      'CERT_REVOKED',
      'CERT_SIGNATURE_FAILURE',
      'UNABLE_TO_GET_ISSUER_CERT',
      'CRL_HAS_EXPIRED',
      'INVALID_CA',
      'HOSTNAME_MISMATCH',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'ERR_TLS_CERT_ALTNAME_FORMAT',
      'ERR_SSL_WRONG_VERSION_NUMBER',
    ]) {
      expect(mapped(driverError('a certificate problem', code))).toEqual({
        code: 'STORE_UNAVAILABLE',
        message: 'PostgreSQL: testing failed: a certificate problem',
        details: { sqlstate: code },
      });
    }
  });

  it("makes pg's own connection failures STORE_UNAVAILABLE by their message, with no SQLSTATE", () => {
    for (const message of [
      'Connection terminated unexpectedly',
      'connection timeout expired',
      'timeout exceeded when trying to connect',
      'Client has encountered a connection error and is not queryable',
      'Cannot use a pool after calling end on the pool',
      'terminating connection due to administrator command',
      'server closed the connection unexpectedly',
      'Query read timeout',
      'The server does not support SSL connections',
      // In any case.
      'SERVER CLOSED THE CONNECTION unexpectedly',
    ]) {
      expect(mapped(driverError(message))).toEqual({
        code: 'STORE_UNAVAILABLE',
        message: `PostgreSQL: testing failed: ${message}`,
        details: {},
      });
    }
  });

  it('describes a host whose addresses all refused by the first of them', () => {
    const refused = new AggregateError(
      [driverError('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), driverError('other')],
      '',
    );
    expect(mapped(refused)).toEqual({
      code: 'STORE_UNAVAILABLE',
      message: 'PostgreSQL: testing failed: connect ECONNREFUSED ::1:5432',
      details: { sqlstate: 'ECONNREFUSED' },
    });
    expect(
      mapped(new AggregateError([driverError('connect ECONNREFUSED', 'ECONNREFUSED')], '')),
    ).toEqual({
      code: 'STORE_UNAVAILABLE',
      message: 'PostgreSQL: testing failed: connect ECONNREFUSED',
      details: { sqlstate: 'ECONNREFUSED' },
    });
    // With a code of its own and no errors, by itself.
    expect(mapped(Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' }))).toEqual({
      code: 'STORE_UNAVAILABLE',
      message: 'PostgreSQL: testing failed: AggregateError',
      details: { sqlstate: 'ECONNREFUSED' },
    });
  });

  it('reports a missing schema or table as STORE_UNAVAILABLE, asking for init()', () => {
    for (const sqlstate of ['42P01', '3F000']) {
      expect(mapped(driverError('relation "x" does not exist', sqlstate))).toEqual({
        code: 'STORE_UNAVAILABLE',
        message:
          'PostgreSQL: testing failed: the schema is missing; call init() first (relation "x" does not exist)',
        details: { sqlstate },
      });
    }
  });

  it('makes anything else INTERNAL, and leaves a MnemoError as it is', () => {
    expect(mapped(driverError('duplicate key', '23505'))).toEqual({
      code: 'INTERNAL',
      message: 'PostgreSQL: testing failed: duplicate key',
      details: { sqlstate: '23505' },
    });
    // 25P02 (in failed transaction) and 22012 (division by zero) are not unavailability.
    for (const sqlstate of ['25P02', '22012', '42601']) {
      expect(mapped(driverError('failed', sqlstate)).code).toBe('INTERNAL');
    }
    expect(mapped('a string')).toEqual({
      code: 'INTERNAL',
      message: 'PostgreSQL: testing failed: a string',
      details: {},
    });
    expect(mapped(driverError(''))).toEqual({
      code: 'INTERNAL',
      message: 'PostgreSQL: testing failed: Error',
      details: {},
    });
    const own = storeClosed();
    expect(mapPostgresError(own, 'testing')).toBe(own);
    expect([own.code, own.message]).toEqual([
      'STORE_UNAVAILABLE',
      'PostgreSQL store is not open: call init() first (or it was closed)',
    ]);
  });

  it('keeps the driver error as the cause', () => {
    const error = driverError('deadlock detected', '40P01');
    expect(mapPostgresError(error, 'testing').cause).toBe(error);
    const other = driverError('duplicate key', '23505');
    expect(mapPostgresError(other, 'testing').cause).toBe(other);
  });
});
