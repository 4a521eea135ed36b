import { describe, expect, it } from 'vitest';
import { href, parseHash } from './router.js';

describe('parseHash', () => {
  it('opens the tenant list for an empty hash', () => {
    expect(parseHash('')).toEqual({ page: 'tenants' });
    expect(parseHash('#/')).toEqual({ page: 'tenants' });
    expect(parseHash('#/tenants')).toEqual({ page: 'tenants' });
  });

  it('reads ids, decoded', () => {
    expect(parseHash('#/tenants/ten_1')).toEqual({ page: 'tenant', tenantId: 'ten_1' });
    expect(parseHash('#/agents/a%2Fb')).toEqual({ page: 'agent', agentId: 'a/b' });
    expect(parseHash('#/tenants/ten%201/usage')).toEqual({ page: 'tenant-usage', tenantId: 'ten 1' });
    expect(parseHash('#/status')).toEqual({ page: 'status' });
    expect(parseHash('#/audit/')).toEqual({ page: 'audit' });
  });

  it('names anything else not found', () => {
    expect(parseHash('#/nope/x/y')).toEqual({ page: 'not-found', path: '/nope/x/y' });
    expect(parseHash('#/agents/%E0')).toEqual({ page: 'not-found', path: '/agents/%E0' });
    expect(parseHash('#/tenants/ten_1/keys')).toEqual({ page: 'not-found', path: '/tenants/ten_1/keys' });
    expect(parseHash('#/agents/agt_1/usage')).toEqual({ page: 'not-found', path: '/agents/agt_1/usage' });
  });

  it('round-trips with href', () => {
    for (const route of [
      { page: 'tenant', tenantId: 'x y' } as const,
      { page: 'tenant-usage', tenantId: 'a/b' } as const,
      { page: 'agent', agentId: 'a/b' } as const,
    ]) {
      expect(parseHash(href(route))).toEqual(route);
    }
  });
});
