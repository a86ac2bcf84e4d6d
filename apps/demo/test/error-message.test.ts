import { describe, expect, it } from 'vitest';
import { errorMessage } from '../src/error-message.js';

describe('errorMessage', () => {
  it('puts a message on one line', () => {
    expect(errorMessage(new Error('connecting failed:\n  server closed the connection\n'))).toBe(
      'connecting failed: server closed the connection',
    );
    expect(errorMessage('plain text')).toBe('plain text');
  });

  it('joins the errors of an AggregateError without a message of its own', () => {
    const refused = new AggregateError([
      new Error('connect ECONNREFUSED ::1:5432'),
      new Error('connect ECONNREFUSED 127.0.0.1:5432'),
    ]);
    expect(errorMessage(refused)).toBe(
      'connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432',
    );
    expect(errorMessage(new AggregateError([new Error('inner')], 'outer'))).toBe('outer');
  });
});
