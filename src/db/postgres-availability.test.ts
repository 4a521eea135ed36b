import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isPostgresUnavailable } from './postgres-availability.js';

const serverError = (code: string) => Object.assign(new pg.DatabaseError('refused', 0, 'error'), { code });
const systemError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });

describe('isPostgresUnavailable', () => {
  it.each([
    ['shutdown', serverError('57P01')],
    ['starting up', serverError('57P03')],
    ['connection exception', serverError('08006')],
    ['too many connections', serverError('53300')],
    ['refused connection', systemError('ECONNREFUSED')],
    ['reset connection', systemError('ECONNRESET')],
    ['cut connection', new Error('Connection terminated unexpectedly')],
    ['pool wait', new Error('timeout exceeded when trying to connect')],
  ])('counts a %s as the database being unavailable', (_name, error) => {
    expect(isPostgresUnavailable(error)).toBe(true);
  });

  it.each([
    ['unique violation', serverError('23505')],
    ['syntax error', serverError('42601')],
    ['full disk', serverError('53100')],
    ['plain bug', new TypeError('cannot read properties of undefined')],
    ['non-error', 'ECONNREFUSED'],
  ])('leaves a %s alone', (_name, error) => {
    expect(isPostgresUnavailable(error)).toBe(false);
  });
});
