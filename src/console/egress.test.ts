import { describe, expect, it } from 'vitest';
import {
  describePorts,
  describeReason,
  describeStanding,
  describeTenants,
  egressStanding,
  hostPort,
} from './egress.js';
import type { EgressCeiling } from './types.js';

const CEILING: EgressCeiling = {
  enabled: true,
  tenants: null,
  packageIndexUrl: 'https://pypi.org/simple/',
  ports: [80, 443],
  maxConnections: 16,
  bytesPerDay: 1024 ** 3,
};

describe('egressStanding', () => {
  it('is open only with sandboxes and egress on and the tenant allowed', () => {
    expect(egressStanding({ operatorEnabled: true, egress: CEILING }, 'ten_1')).toBe('open');
    expect(egressStanding({ operatorEnabled: true, egress: { ...CEILING, tenants: ['ten_1'] } }, 'ten_1')).toBe('open');
    expect(egressStanding({ operatorEnabled: true, egress: { ...CEILING, tenants: ['ten_2'] } }, 'ten_1')).toBe(
      'tenant-not-listed',
    );
    expect(egressStanding({ operatorEnabled: true, egress: { ...CEILING, enabled: false } }, 'ten_1')).toBe(
      'egress-off',
    );
    expect(egressStanding({ operatorEnabled: false, egress: CEILING }, 'ten_1')).toBe('sandboxes-off');
  });

  it('says that a setting waits for the operator when egress is off', () => {
    expect(describeStanding('egress-off')).toBe(
      'The operator keeps sandbox network access off; this setting takes effect only when it is on.',
    );
  });
});

describe('egress wording', () => {
  it('says refusal reasons in plain words, and nothing for an allowed connection', () => {
    expect(describeReason('policy')).toBe("Not in the agent's network policy");
    expect(describeReason('private_address')).toBe('Private, local or reserved address');
    expect(describeReason(null)).toBe('—');
  });

  it('brackets IPv6 literals in host:port', () => {
    expect(hostPort('pypi.org', 443)).toBe('pypi.org:443');
    expect(hostPort('fd00::1', 8443)).toBe('[fd00::1]:8443');
  });

  it('names the tenants and ports', () => {
    expect(describeTenants(null)).toBe('all tenants');
    expect(describeTenants(['ten_1'])).toBe('tenant ten_1');
    expect(describeTenants(['ten_1', 'ten_2'])).toBe('tenants ten_1, ten_2');
    expect(describeTenants([])).toBe('no tenant');
    expect(describePorts([80, 443])).toBe('80, 443');
    expect(describePorts([])).toBe('none');
  });
});
