import { describe, expect, it } from 'vitest';
import { createClientAddressResolver } from '../src/artifacts/trusted-proxies.js';
import { parseCidr } from '../src/config.js';

const cidrs = (...values: string[]) =>
  values.map((value) => {
    const cidr = parseCidr(value);
    if (!cidr) throw new Error(`not a CIDR: ${value}`);
    return cidr;
  });

describe('the download audit client address', () => {
  it('is the socket peer when no proxy is trusted, whatever X-Forwarded-For claims', () => {
    const resolve = createClientAddressResolver([]);
    expect(resolve('192.0.2.10', '203.0.113.5')).toBe('192.0.2.10');
    expect(resolve('::ffff:192.0.2.10', undefined)).toBe('192.0.2.10');
    expect(resolve(undefined, '203.0.113.5')).toBeNull();
  });

  it('ignores X-Forwarded-For from a peer outside the trusted proxies', () => {
    const resolve = createClientAddressResolver(cidrs('10.0.0.0/8'));
    expect(resolve('192.0.2.10', '203.0.113.5')).toBe('192.0.2.10');
  });

  it('takes the first untrusted hop from the right behind trusted proxies (IPv4, mapped and IPv6)', () => {
    const resolve = createClientAddressResolver(cidrs('10.0.0.0/8', 'fd00::/8'));
    expect(resolve('10.1.1.1', '198.51.100.1, 203.0.113.5, 10.2.2.2')).toBe('203.0.113.5');
    expect(resolve('::ffff:10.1.1.1', '203.0.113.5')).toBe('203.0.113.5');
    expect(resolve('fd00::1', '2001:db8::7, fd00::2')).toBe('2001:db8::7');
    // Every hop trusted: the leftmost is as far as the chain goes.
    expect(resolve('10.1.1.1', '10.3.3.3, 10.2.2.2')).toBe('10.3.3.3');
    // No header, or a hop that is not an address: the peer itself.
    expect(resolve('10.1.1.1', undefined)).toBe('10.1.1.1');
    expect(resolve('10.1.1.1', '203.0.113.5, not-an-ip')).toBe('10.1.1.1');
  });
});
