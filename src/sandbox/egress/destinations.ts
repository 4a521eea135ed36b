import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIPv4 } from 'node:net';
import type { Cidr } from '../../config.js';
import type { RequestedHost } from '../../host-rules.js';
import { isForbiddenAddress } from '../../net/address-policy.js';

/** The host's resolver, as `dns.promises.lookup(name, { all: true })` answers (injectable for tests). */
export type ResolveAll = (name: string) => Promise<Array<{ address: string; family: number }>>;

/** The host's own resolver: `/etc/hosts` and the operator's DNS apply (the sandbox has neither). */
export const hostResolver: ResolveAll = (name) => dnsLookup(name, { all: true, verbatim: true });

/** Where a checked connection goes, or why it may not. */
export type Destination =
  | { ok: true; address: string; family: 4 | 6 }
  | { ok: false; reason: 'private_address' | 'resolve_failed'; address: string | null };

/** `::ffff:10.1.2.3` is 10.1.2.3 to the private-CIDR exceptions (a dual-stack answer for an IPv4 host). */
function plainAddress(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped?.[1]) return { address: mapped[1], family: 'ipv4' };
  return { address, family: isIPv4(address) ? 'ipv4' : 'ipv6' };
}

/**
 * Checks and resolves where a connection the policy allowed may go. A name is resolved once with
 * the host's resolver and **every** address it gives must pass: none may lie in a refused range
 * (loopback, private, CGNAT, link-local and cloud metadata, unique-local, multicast, unspecified,
 * documentation and other special-purpose ranges, and their IPv4-mapped and translated IPv6
 * forms) unless an operator's private CIDR lists it. The answer is the address to connect to,
 * never looked up again, so a second answer (DNS rebinding) cannot change where it goes. An IP
 * literal is checked the same way.
 *
 * @example
 * const destinations = createDestinationChecker({ privateCidrs: [] });
 * await destinations.check({ kind: 'ip', host: '169.254.169.254', port: 80 });
 * // { ok: false, reason: 'private_address', address: '169.254.169.254' }
 */
export function createDestinationChecker(options: { privateCidrs: readonly Cidr[]; resolve?: ResolveAll }) {
  const exceptions = new BlockList();
  for (const cidr of options.privateCidrs) exceptions.addSubnet(cidr.address, cidr.prefix, cidr.family);
  const resolve = options.resolve ?? hostResolver;
  const refused = (address: string) => {
    if (!isForbiddenAddress(address)) return false;
    const plain = plainAddress(address);
    return !exceptions.check(plain.address, plain.family);
  };

  return {
    async check(requested: RequestedHost): Promise<Destination> {
      if (requested.kind === 'ip') {
        if (refused(requested.host)) return { ok: false, reason: 'private_address', address: requested.host };
        return { ok: true, address: requested.host, family: isIPv4(requested.host) ? 4 : 6 };
      }
      let answers: Array<{ address: string; family: number }>;
      try {
        answers = await resolve(requested.host);
      } catch {
        return { ok: false, reason: 'resolve_failed', address: null };
      }
      if (answers.length === 0) return { ok: false, reason: 'resolve_failed', address: null };
      const bad = answers.find((answer) => refused(answer.address));
      if (bad) return { ok: false, reason: 'private_address', address: bad.address };
      const first = answers[0] as { address: string; family: number };
      return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 };
    },
  };
}
