import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../agents/config-schema.js';
import { loadConfig } from '../../config.js';
import { parseRequestedHost } from '../../host-rules.js';
import { decide, effectivePolicy } from './effective-policy.js';

const OPERATOR_ON = loadConfig({
  MORDN_SANDBOX_EGRESS: 'on',
  MORDN_SANDBOX_PACKAGE_INDEX_URL: 'https://mirror.example.net/pypi/simple/',
  MORDN_SANDBOX_PACKAGE_INDEX_HOSTS: 'files.example.net,cdn.example.net:8443',
  MORDN_SANDBOX_EGRESS_PORTS: '80,443,8443',
}).sandbox.egress;

function agent(network: unknown): AgentConfig {
  return { schemaVersion: 1, runtime: { sandbox: { enabled: true, network } } } as AgentConfig;
}
const host = (name: string, port: number) =>
  parseRequestedHost(name, port) as NonNullable<ReturnType<typeof parseRequestedHost>>;

describe('effectivePolicy', () => {
  it('is none when the agent says nothing or none, whatever the operator allows', () => {
    expect(effectivePolicy(OPERATOR_ON, 'ten_a', { schemaVersion: 1 }).mode).toBe('none');
    expect(effectivePolicy(OPERATOR_ON, 'ten_a', agent({ mode: 'none' }))).toMatchObject({
      mode: 'none',
      closedByOperator: false,
    });
  });

  it('is none, closed by the operator, when egress is off or the tenant is not listed', () => {
    const off = loadConfig({}).sandbox.egress;
    expect(effectivePolicy(off, 'ten_a', agent({ mode: 'packages' }))).toMatchObject({
      mode: 'none',
      closedByOperator: true,
    });
    const narrowed = loadConfig({ MORDN_SANDBOX_EGRESS: 'on', MORDN_SANDBOX_EGRESS_TENANTS: 'ten_b' }).sandbox.egress;
    expect(effectivePolicy(narrowed, 'ten_a', agent({ mode: 'packages' })).mode).toBe('none');
    expect(effectivePolicy(narrowed, 'ten_b', agent({ mode: 'packages' })).mode).toBe('packages');
  });
});

describe('decide', () => {
  const packages = effectivePolicy(OPERATOR_ON, 'ten_a', agent({ mode: 'packages' }));
  const allowlist = effectivePolicy(
    OPERATOR_ON,
    'ten_a',
    agent({ mode: 'allowlist', allow: ['api.example.com', '*.example.org:8443', '10.1.2.3'] }),
  );

  it('opens the index host on its own port, and the extra index hosts', () => {
    expect(decide(packages, host('mirror.example.net', 443))).toEqual({ allowed: true });
    expect(decide(packages, host('mirror.example.net', 80))).toEqual({ allowed: false, reason: 'port' });
    expect(decide(packages, host('files.example.net', 80))).toEqual({ allowed: true });
    expect(decide(packages, host('cdn.example.net', 8443))).toEqual({ allowed: true });
    expect(decide(packages, host('cdn.example.net', 443))).toEqual({ allowed: false, reason: 'port' });
    expect(decide(packages, host('api.example.com', 443))).toEqual({ allowed: false, reason: 'policy' });
  });

  it('opens the allowlist, on the operator ports only, and the index with it', () => {
    expect(decide(allowlist, host('api.example.com', 443))).toEqual({ allowed: true });
    expect(decide(allowlist, host('api.example.com', 22))).toEqual({ allowed: false, reason: 'port' });
    expect(decide(allowlist, host('deep.a.example.org', 8443))).toEqual({ allowed: true });
    expect(decide(allowlist, host('a.example.org', 443))).toEqual({ allowed: false, reason: 'port' });
    expect(decide(allowlist, host('example.org', 8443))).toEqual({ allowed: false, reason: 'policy' });
    expect(decide(allowlist, host('10.1.2.3', 80))).toEqual({ allowed: true });
    expect(decide(allowlist, host('mirror.example.net', 443))).toEqual({ allowed: true });
    expect(decide(allowlist, host('evil.example', 443))).toEqual({ allowed: false, reason: 'policy' });
  });

  it('refuses everything with none, saying egress_off when the operator closed what the agent asked for', () => {
    const closed = effectivePolicy(loadConfig({}).sandbox.egress, 'ten_a', agent({ mode: 'packages' }));
    expect(decide(closed, host('pypi.org', 443))).toEqual({ allowed: false, reason: 'egress_off' });
    const none = effectivePolicy(OPERATOR_ON, 'ten_a', agent({ mode: 'none' }));
    expect(decide(none, host('mirror.example.net', 443))).toEqual({ allowed: false, reason: 'policy' });
  });
});
