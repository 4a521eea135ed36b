import { BlockList, isIP } from 'node:net';
import type { Cidr } from '../config.js';

/** An IPv4 peer reached over a dual-stack socket (`::ffff:10.0.0.1`) is matched as IPv4. */
function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped?.[1] ?? address;
}

/**
 * The client address of a request for the download audit: the socket's peer, unless that peer
 * is one of the operator's trusted proxies, in which case `X-Forwarded-For` is read from the
 * right, skipping further trusted hops, and the first untrusted address is the client. Without
 * trusted proxies the header is never read, so a client cannot choose what is recorded.
 *
 * @example
 * const resolve = createClientAddressResolver([{ address: '10.0.0.0', prefix: 8, family: 'ipv4' }]);
 * resolve('10.1.2.3', '203.0.113.9, 10.0.0.7') // '203.0.113.9'
 */
export function createClientAddressResolver(
  trusted: readonly Cidr[],
): (peer: string | undefined, forwardedFor: string | undefined) => string | null {
  const list = new BlockList();
  for (const cidr of trusted) list.addSubnet(cidr.address, cidr.prefix, cidr.family);
  const isTrusted = (address: string) => {
    const plain = plainAddress(address);
    const version = isIP(plain);
    return version !== 0 && list.check(plain, version === 4 ? 'ipv4' : 'ipv6');
  };
  return (peer, forwardedFor) => {
    if (peer === undefined) return null;
    const client = plainAddress(peer);
    if (trusted.length === 0 || !isTrusted(client) || forwardedFor === undefined) return client;
    const hops = forwardedFor
      .split(',')
      .map((hop) => hop.trim())
      .filter((hop) => hop !== '');
    for (let index = hops.length - 1; index >= 0; index -= 1) {
      const hop = plainAddress(hops[index] as string);
      if (isIP(hop) === 0) return client;
      if (!isTrusted(hop)) return hop;
    }
    return hops.length > 0 ? plainAddress(hops[0] as string) : client;
  };
}
