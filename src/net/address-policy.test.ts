import { describe, expect, it } from 'vitest';
import { isForbiddenAddress, isForbiddenHostname } from './address-policy.js';

/** `[address, why it is refused]` */
const FORBIDDEN_ADDRESSES: Array<[string, string]> = [
  ['127.0.0.1', 'IPv4 loopback'],
  ['127.255.255.254', 'IPv4 loopback, end of 127/8'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', '0/8 "this network"'],
  ['10.0.0.1', 'private 10/8'],
  ['10.255.255.255', 'private 10/8, last'],
  ['172.16.0.1', 'private 172.16/12, first'],
  ['172.31.255.254', 'private 172.16/12, last'],
  ['192.168.1.1', 'private 192.168/16'],
  ['169.254.169.254', 'link-local: AWS/GCP/Azure metadata'],
  ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'CGNAT 100.64/10, first'],
  ['100.127.255.254', 'CGNAT 100.64/10, last'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast (SSDP)'],
  ['240.0.0.1', 'reserved 240/4'],
  ['255.255.255.255', 'broadcast'],
  ['198.18.0.1', 'benchmarking 198.18/15'],
  ['198.19.255.254', 'benchmarking 198.18/15, last'],
  ['192.0.0.8', 'IETF protocol assignments'],
  ['192.0.2.1', 'documentation TEST-NET-1'],
  ['198.51.100.7', 'documentation TEST-NET-2'],
  ['203.0.113.9', 'documentation TEST-NET-3'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['::1', 'IPv6 loopback'],
  ['[::1]', 'IPv6 loopback, bracketed as in a URL'],
  ['0:0:0:0:0:0:0:1', 'IPv6 loopback, long form'],
  ['::', 'IPv6 unspecified'],
  ['fe80::1', 'link-local fe80::/10'],
  ['fe80::1%eth0', 'link-local with a zone'],
  ['febf:ffff::1', 'link-local fe80::/10, last block'],
  ['fc00::1', 'ULA fc00::/7'],
  ['fd12:3456:789a::1', 'ULA fd00::/8'],
  ['fec0::1', 'site-local fec0::/10'],
  ['ff02::1', 'multicast ff00::/8'],
  ['ff05::c', 'multicast, site scope'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
  ['::FFFF:7F00:0001', 'IPv4-mapped loopback, uppercase hex'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'IPv4-mapped metadata, long hex form'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated loopback'],
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::a9fe:a9fe', 'IPv4-compatible metadata, hex form'],
  ['64:ff9b::127.0.0.1', 'NAT64 with embedded loopback'],
  ['64:ff9b::a00:1', 'NAT64 with embedded 10.0.0.1, hex form'],
  ['64:ff9b:1::1', 'local-use NAT64 64:ff9b:1::/48'],
  ['64:ff9b:1::101:101', 'local-use NAT64, even with a public-looking tail'],
  ['2002:7f00:1::', '6to4 of 127.0.0.1'],
  ['2002:a9fe:a9fe::1', '6to4 of the metadata address'],
  ['2002:c0a8:101::', '6to4 of 192.168.1.1'],
  ['2001::1', 'Teredo 2001::/32'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo, full address'],
  ['2001:2::1', 'benchmarking 2001:2::/48'],
  ['2001:db8::1', 'documentation 2001:db8::/32'],
  ['3fff::1', 'documentation 3fff::/20'],
  ['100::1', 'discard-only 100::/64'],
  ['::2', 'IPv4-compatible 0.0.0.2'],
  ['1::1', 'outside global unicast'],
  ['not-an-address', 'not an IP literal: fails closed'],
  ['', 'empty: fails closed'],
  ['127.1', 'short IPv4 spelling: not an address, fails closed'],
  ['0x7f.0.0.1', 'hex IPv4 spelling: not an address, fails closed'],
  ['2130706433', 'integer IPv4 spelling: not an address, fails closed'],
  ['010.0.0.1', 'leading zeros: not an address, fails closed'],
];

/** `[address, what it is]` */
const ALLOWED_ADDRESSES: Array<[string, string]> = [
  ['1.1.1.1', 'Cloudflare DNS'],
  ['8.8.8.8', 'Google DNS'],
  ['93.184.215.14', 'a public web server'],
  ['9.255.255.255', 'just below 10/8'],
  ['11.0.0.1', 'just above 10/8'],
  ['100.63.255.255', 'just below CGNAT'],
  ['100.128.0.0', 'just above CGNAT'],
  ['172.15.255.255', 'just below 172.16/12'],
  ['172.32.0.1', 'just above 172.16/12'],
  ['169.253.255.255', 'just below link-local'],
  ['192.167.255.255', 'just below 192.168/16'],
  ['198.17.255.255', 'just below 198.18/15'],
  ['198.20.0.1', 'just above 198.18/15'],
  ['223.255.255.254', 'just below multicast'],
  ['2606:4700:4700::1111', 'Cloudflare DNS over IPv6'],
  ['2001:4860:4860::8888', 'Google DNS over IPv6'],
  ['2a00:1450:4001:82a::200e', 'a public IPv6 web server'],
  ['[2606:4700:4700::1111]', 'public IPv6, bracketed'],
  ['::ffff:1.1.1.1', 'IPv4-mapped public'],
  ['::ffff:101:101', 'IPv4-mapped public, hex form'],
  ['64:ff9b::1.1.1.1', 'NAT64 of a public address'],
  ['64:ff9b::808:808', 'NAT64 of a public address, hex form'],
  ['2002:101:101::1', '6to4 of a public address'],
  ['2001:200::1', 'just above 2001::/23'],
  ['2001:db9::1', 'just above 2001:db8::/32'],
];

describe('isForbiddenAddress', () => {
  it.each(FORBIDDEN_ADDRESSES)('refuses %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(ALLOWED_ADDRESSES)('allows %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

describe('isForbiddenHostname', () => {
  it.each([
    'localhost',
    'LOCALHOST',
    'localhost.',
    'app.localhost',
    'metadata.google.internal',
    'metadata.google.internal.',
    'Metadata.Google.Internal',
    'printer.local',
    'router.home.arpa',
    '',
    '127.0.0.1',
    '[::1]',
    '169.254.169.254',
    '[::ffff:7f00:1]',
  ])('refuses %j before resolving it', (hostname) => {
    expect(isForbiddenHostname(hostname)).toBe(true);
  });

  it.each([
    'example.com',
    'api.example.com.',
    'mcp.internal-tools.example.com',
    'local.example.com',
    'localhost.example.com',
    '1.1.1.1',
    '[2606:4700:4700::1111]',
  ])('leaves %j to the check of its resolved addresses', (hostname) => {
    expect(isForbiddenHostname(hostname)).toBe(false);
  });
});
