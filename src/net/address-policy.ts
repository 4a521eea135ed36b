import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which destinations an outbound request to an operator-configured server may reach. Anything that
 * lands inside the host, its private networks or its cloud provider (loopback, private, link-local
 * metadata services, CGNAT, reserved and documentation ranges, multicast) is refused, including
 * IPv6 spellings that carry such an IPv4 address inside them.
 */

/** `[base, prefix length]`; comments say why each range is refused. */
const FORBIDDEN_IPV4_SPELLED: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on many systems
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT, shared address space
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, home of cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, including the broadcast address 255.255.255.255
];

/**
 * Special ranges inside global unicast `2000::/3`. Everything outside `2000::/3` (loopback,
 * unspecified, ULA `fc00::/7`, link-local `fe80::/10`, site-local `fec0::/10`, multicast `ff00::/8`,
 * discard `100::/64`, local NAT64 `64:ff9b:1::/48`…) is refused wholesale, once the forms that embed
 * an IPv4 address have been judged by that address.
 */
const FORBIDDEN_GLOBAL_IPV6_SPELLED: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
];

/** Names that only ever mean this host or a private network, whatever DNS says. */
const NAT64_PREFIX = ipv6Bytes('64:ff9b::');
const FORBIDDEN_IPV4_RANGES = FORBIDDEN_IPV4_SPELLED.map(([base, prefix]) => [ipv4Bytes(base), prefix] as const);
const FORBIDDEN_GLOBAL_IPV6_RANGES = FORBIDDEN_GLOBAL_IPV6_SPELLED.map(
  ([base, prefix]) => [ipv6Bytes(base), prefix] as const,
);

const FORBIDDEN_HOSTNAME_SUFFIXES = ['.localhost', '.local', '.internal', '.home.arpa'];

function ipv4Bytes(address: string): Uint8Array {
  return Uint8Array.from(address.split('.'), Number);
}

function ipv6Groups(part: string): number[] {
  if (part === '') return [];
  return part.split(':').flatMap((group) => {
    if (!group.includes('.')) return [Number.parseInt(group, 16)];
    const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(group);
    return [(a << 8) | b, (c << 8) | d];
  });
}

/** The 16 bytes of an IPv6 address already accepted by `isIPv6` (zone identifier removed). */
function ipv6Bytes(address: string): Uint8Array {
  const [head = '', tail] = address.split('::');
  const headGroups = ipv6Groups(head);
  const tailGroups = tail === undefined ? [] : ipv6Groups(tail);
  const zeros = new Array<number>(8 - headGroups.length - tailGroups.length).fill(0);
  const bytes = new Uint8Array(16);
  [...headGroups, ...zeros, ...tailGroups].forEach((group, index) => {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  });
  return bytes;
}

function inRange(bytes: Uint8Array, base: Uint8Array, prefix: number): boolean {
  for (let bit = 0; bit < prefix; bit += 8) {
    const width = Math.min(8, prefix - bit);
    const mask = (0xff << (8 - width)) & 0xff;
    if (((bytes[bit / 8] ?? 0) & mask) !== ((base[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function isForbiddenIpv4(bytes: Uint8Array): boolean {
  return FORBIDDEN_IPV4_RANGES.some(([base, prefix]) => inRange(bytes, base, prefix));
}

function allZero(bytes: Uint8Array, from: number, to: number): boolean {
  return bytes.subarray(from, to).every((byte) => byte === 0);
}

/**
 * The IPv4 address an IPv6 address stands for, when a packet to it ends up at that IPv4 host:
 * IPv4-compatible `::a.b.c.d` (also `::` and `::1`), IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and 6to4 `2002:aabb:ccdd::`.
 */
function embeddedIpv4(bytes: Uint8Array): Uint8Array | undefined {
  const last = bytes.subarray(12, 16);
  if (allZero(bytes, 0, 12)) return last;
  if (allZero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return last;
  if (allZero(bytes, 0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && allZero(bytes, 10, 12)) return last;
  if (inRange(bytes, NAT64_PREFIX, 96)) return last;
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.subarray(2, 6);
  return undefined;
}

function isForbiddenIpv6(bytes: Uint8Array): boolean {
  const embedded = embeddedIpv4(bytes);
  if (embedded) return isForbiddenIpv4(embedded);
  if (((bytes[0] ?? 0) & 0xe0) !== 0x20) return true;
  return FORBIDDEN_GLOBAL_IPV6_RANGES.some(([base, prefix]) => inRange(bytes, base, prefix));
}

/** `[::1]` → `::1`; `fe80::1%eth0` → `fe80::1` (the zone does not change where the address is). */
function bareAddress(address: string): string {
  const unbracketed = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = unbracketed.indexOf('%');
  return zone === -1 ? unbracketed : unbracketed.slice(0, zone);
}

/**
 * Whether an outbound connection to this IP address must be refused. Accepts dotted-decimal IPv4
 * and any IPv6 spelling (bracketed or not, with or without a zone). Fails closed: anything that is
 * not an IP address is forbidden, so a caller that forgot to resolve a name cannot slip it through.
 *
 * @example
 * isForbiddenAddress('169.254.169.254'); // true (cloud metadata)
 * isForbiddenAddress('::ffff:7f00:1'); // true (127.0.0.1, IPv4-mapped)
 * isForbiddenAddress('1.1.1.1'); // false
 */
export function isForbiddenAddress(address: string): boolean {
  const bare = bareAddress(address);
  if (isIPv4(bare)) return isForbiddenIpv4(ipv4Bytes(bare));
  if (isIPv6(bare)) return isForbiddenIpv6(ipv6Bytes(bare));
  return true;
}

/**
 * Whether a host name (or IP literal, judged by `isForbiddenAddress`) must be refused before it is
 * even resolved: `localhost` and names under `.localhost`, `.local`, `.internal` (such as
 * `metadata.google.internal`) and `.home.arpa` always mean this host or a private network. Case and
 * trailing dots do not matter. Names not refused here still need every resolved address checked.
 */
export function isForbiddenHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  const bare = bareAddress(name);
  if (isIPv4(bare) || isIPv6(bare)) return isForbiddenAddress(bare);
  if (name === '' || name === 'localhost') return true;
  return FORBIDDEN_HOSTNAME_SUFFIXES.some((suffix) => name.endsWith(suffix));
}
