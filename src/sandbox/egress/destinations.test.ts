import { describe, expect, it } from 'vitest';
import { parseCidr } from '../../config.js';
import { parseRequestedHost } from '../../host-rules.js';
import { createDestinationChecker, type ResolveAll } from './destinations.js';

const host = (name: string) => parseRequestedHost(name, 443) as NonNullable<ReturnType<typeof parseRequestedHost>>;
const answers =
  (table: Record<string, string[]>): ResolveAll =>
  async (name) => {
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
const cidrs = (...entries: string[]) =>
  entries.map((entry) => parseCidr(entry) as NonNullable<ReturnType<typeof parseCidr>>);

/** One address of every refused range, and an IPv6 spelling that carries one inside it. */
const REFUSED = [
  '127.0.0.1',
  '127.255.255.254',
  '0.0.0.0',
  '10.0.0.1',
  '172.16.0.1',
  '192.168.1.1',
  '100.64.0.1',
  '169.254.169.254',
  '224.0.0.1',
  '240.0.0.1',
  '255.255.255.255',
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9',
  '198.18.0.1',
  '192.0.0.8',
  '::1',
  '::',
  'fe80::1',
  'fd00:ec2::254',
  'fc00::1',
  'ff02::1',
  '2001:db8::1',
  '::ffff:127.0.0.1',
  '::ffff:a9fe:a9fe',
  '64:ff9b::a00:1',
  '2002:a9fe:a9fe::1',
];

describe('createDestinationChecker', () => {
  it.each(REFUSED)('refuses %s, as a literal and behind a name', async (address) => {
    const checker = createDestinationChecker({ privateCidrs: [], resolve: answers({ 'name.example': [address] }) });
    expect(
      await checker.check(parseRequestedHost(address.includes(':') ? `[${address}]` : address, 443) as never),
    ).toEqual({
      ok: false,
      reason: 'private_address',
      address: address.includes(':') ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address,
    });
    expect(await checker.check(host('name.example'))).toEqual({ ok: false, reason: 'private_address', address });
  });

  it('connects to a public answer, the first one, resolving once', async () => {
    let lookups = 0;
    const checker = createDestinationChecker({
      privateCidrs: [],
      resolve: async () => {
        lookups += 1;
        return [
          { address: '93.184.215.14', family: 4 },
          { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
        ];
      },
    });
    expect(await checker.check(host('example.com'))).toEqual({ ok: true, address: '93.184.215.14', family: 4 });
    expect(lookups).toBe(1);
  });

  it('checks every answer: one refused address refuses the name', async () => {
    const checker = createDestinationChecker({
      privateCidrs: [],
      resolve: answers({ 'rebind.example': ['93.184.215.14', '169.254.169.254'] }),
    });
    expect(await checker.check(host('rebind.example'))).toEqual({
      ok: false,
      reason: 'private_address',
      address: '169.254.169.254',
    });
  });

  it('lets the private CIDRs through, also in their IPv4-mapped form, and nothing next to them', async () => {
    const checker = createDestinationChecker({
      privateCidrs: cidrs('10.1.2.3/32', 'fd00:1::/64'),
      resolve: answers({ mirror: ['10.1.2.3'], mapped: ['::ffff:10.1.2.3'], next: ['10.1.2.4'], v6: ['fd00:1::9'] }),
    });
    expect(await checker.check(host('mirror'))).toMatchObject({ ok: true, address: '10.1.2.3' });
    expect(await checker.check(host('mapped'))).toMatchObject({ ok: true });
    expect(await checker.check(host('next'))).toMatchObject({ ok: false, reason: 'private_address' });
    expect(await checker.check(host('v6'))).toMatchObject({ ok: true, family: 6 });
    expect(await checker.check(host('10.1.2.3'))).toMatchObject({ ok: true });
  });

  it('reports a name that does not resolve, or resolves to nothing', async () => {
    const checker = createDestinationChecker({ privateCidrs: [], resolve: answers({ empty: [] }) });
    expect(await checker.check(host('missing.example'))).toEqual({
      ok: false,
      reason: 'resolve_failed',
      address: null,
    });
    expect(await checker.check(host('empty'))).toEqual({ ok: false, reason: 'resolve_failed', address: null });
  });
});
