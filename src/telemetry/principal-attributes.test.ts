import { describe, expect, it } from 'vitest';
import { createUserHash } from '../auth/user-hash.js';
import { principalAttributes } from './principal-attributes.js';

const SECRET = 'a-signing-secret-of-at-least-32-characters';

describe('createUserHash', () => {
  it('is stable for one secret, differs across secrets and users, and never shows the id', () => {
    const hash = createUserHash(SECRET)('alice@example.com');
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(createUserHash(SECRET)('alice@example.com')).toBe(hash);
    expect(createUserHash(`${SECRET}!`)('alice@example.com')).not.toBe(hash);
    expect(createUserHash(SECRET)('bob@example.com')).not.toBe(hash);
  });
});

describe('principalAttributes', () => {
  it('gives spans the tenant and agent ids and the hash, never the user id', () => {
    const principal = { tenantId: 'ten_1', agentId: 'agt_1', userId: 'alice@example.com' };
    const userHash = createUserHash(SECRET);
    expect(principalAttributes(principal, userHash)).toEqual({
      'mordn.tenant.id': 'ten_1',
      'mordn.agent.id': 'agt_1',
      'enduser.pseudo.id': userHash('alice@example.com'),
    });
    expect(JSON.stringify(principalAttributes(principal, undefined))).not.toContain('alice');
  });
});
