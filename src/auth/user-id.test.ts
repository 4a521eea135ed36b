import { describe, expect, it } from 'vitest';
import { ServiceError } from '../errors.js';
import { isAnonymousUserId, parseUserId, rejectAnonymousUser } from './user-id.js';

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ServiceError) return error.code;
    throw error;
  }
  return undefined;
}

describe('parseUserId', () => {
  it.each(['u', 'user_42', 'alice@example.com', 'auth0|5f7c8ec7c33c6c004bbafe82', 'Has Inner Space', 'u'.repeat(256)])(
    'accepts %s exactly as sent',
    (userId) => {
      expect(parseUserId([userId])).toBe(userId);
    },
  );

  it.each([
    [[], 'MISSING_USER'],
    [[''], 'INVALID_USER'],
    [['u'.repeat(257)], 'INVALID_USER'],
    [['a', 'b'], 'INVALID_USER'],
    [[' leading'], 'INVALID_USER'],
    [['trailing '], 'INVALID_USER'],
    [['tab\there'], 'INVALID_USER'],
    [['nul\u0000'], 'INVALID_USER'],
    [['caf\u00e9'], 'INVALID_USER'],
    [['rtl\u202eoverride'], 'INVALID_USER'],
    [['alice\u00a0'], 'INVALID_USER'],
    [['\u00a0alice'], 'INVALID_USER'],
    [['ali\u2003ce'], 'INVALID_USER'],
    [['alice\ufeff'], 'INVALID_USER'],
    [['alice\u0085'], 'INVALID_USER'],
    [['alice\u007f'], 'INVALID_USER'],
    [['alice\n'], 'INVALID_USER'],
    [['alice,bob'], 'INVALID_USER'],
    [['alice, alice'], 'INVALID_USER'],
    [[','], 'INVALID_USER'],
  ])('refuses %o with %s', (values, code) => {
    expect(codeOf(() => parseUserId(values))).toBe(code);
  });
});

describe('anonymous users', () => {
  it.each(['anon:123', 'ANON:123', 'Anon:123', 'aNoN:', 'anon:'])(
    'recognises %s as anonymous in any case',
    (userId) => {
      expect(isAnonymousUserId(userId)).toBe(true);
    },
  );

  it.each(['user-anon:1', 'anon', 'anon-1', 'anonymous', ' anon:1', 'an0n:1'])(
    'does not take %s for anonymous',
    (userId) => {
      expect(isAnonymousUserId(userId)).toBe(false);
    },
  );

  it('rejects anon: users of any case with 403 ANONYMOUS_USER', () => {
    expect(codeOf(() => rejectAnonymousUser('anon:visitor'))).toBe('ANONYMOUS_USER');
    expect(codeOf(() => rejectAnonymousUser('ANON:visitor'))).toBe('ANONYMOUS_USER');
    expect(codeOf(() => rejectAnonymousUser('Anon:visitor'))).toBe('ANONYMOUS_USER');
    expect(codeOf(() => rejectAnonymousUser('user-1'))).toBeUndefined();
  });
});
