import { isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * A destination as a network policy names it, normalised: a DNS name (IDNA, lower case, no
 * trailing dot), a `*.` wildcard over one, or an IP literal (IPv4 dotted decimal, IPv6 in its
 * compressed lower-case form), with an optional port.
 */
export type HostRule =
  | { kind: 'name'; host: string; port?: number }
  | { kind: 'wildcard'; domain: string; port?: number }
  | { kind: 'ip'; host: string; port?: number };

/** A destination a client asked for: a name or an IP literal, and a port. */
export interface RequestedHost {
  kind: 'name' | 'ip';
  host: string;
  port: number;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_NAME = 253;

/** The canonical spelling of an IPv6 literal (`[FD00:0::1]` and `fd00::1` are one address). */
function canonicalIpv6(literal: string): string {
  return new URL(`http://[${literal}]/`).hostname.slice(1, -1);
}

/**
 * A DNS name as IDNA ASCII in lower case without its trailing dot, or undefined when it is not
 * one: empty labels, labels over 63 bytes or outside letters, digits and hyphens, names over 253
 * bytes, and names whose last label is numeric (`127.1`, `0x7f.1`, `2130706433`: spellings of
 * addresses some resolvers read as IPv4, never names).
 */
export function normalizeName(name: string): string | undefined {
  if (name === '' || /[\s/\\@?#%]/.test(name)) return undefined;
  const ascii = domainToASCII(name.replace(/\.$/, '')).toLowerCase();
  if (ascii === '' || ascii.length > MAX_NAME) return undefined;
  const labels = ascii.split('.');
  if (!labels.every((label) => LABEL.test(label))) return undefined;
  const last = labels.at(-1) as string;
  if (/^(?:\d+|0x[0-9a-f]*)$/.test(last)) return undefined;
  return ascii;
}

function parsePort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65_535 ? port : undefined;
}

/** Splits `host[:port]`, `[v6][:port]` and a bare IPv6 literal; undefined when malformed. */
function splitHostPort(text: string): { host: string; port?: number; bracketed: boolean } | undefined {
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) return undefined;
    const rest = text.slice(close + 1);
    const host = text.slice(1, close);
    if (rest === '') return { host, bracketed: true };
    if (!rest.startsWith(':')) return undefined;
    const port = parsePort(rest.slice(1));
    return port === undefined ? undefined : { host, port, bracketed: true };
  }
  const colons = text.split(':').length - 1;
  if (colons > 1) return { host: text, bracketed: false };
  if (colons === 1) {
    const [host = '', portText = ''] = text.split(':');
    const port = parsePort(portText);
    return port === undefined ? undefined : { host, port, bracketed: false };
  }
  return { host: text, bracketed: false };
}

/**
 * Parses one policy entry (`api.example.com`, `*.example.org`, `files.example.net:8443`,
 * `10.1.2.3:8443`, `[fd00::1]:8443`). Returns the normalised rule, or a message saying what is
 * wrong with it. A wildcard matches subdomains at any depth, never the bare domain, and must
 * name a domain of two labels or more.
 *
 * @example
 * parseHostRule('Bücher.example:8443'); // { kind: 'name', host: 'xn--bcher-kva.example', port: 8443 }
 */
export function parseHostRule(entry: string): HostRule | { error: string } {
  const invalid = {
    error: 'must be a host name, a "*." wildcard or an IP literal, with an optional port from 1 to 65535',
  };
  if (entry !== entry.trim() || entry === '' || entry.includes('://') || entry.includes('/')) return invalid;
  const parts = splitHostPort(entry);
  if (!parts) return invalid;
  const port = parts.port === undefined ? {} : { port: parts.port };
  if (parts.bracketed || isIPv6(parts.host)) {
    return isIPv6(parts.host) && !parts.host.includes('%')
      ? { kind: 'ip', host: canonicalIpv6(parts.host), ...port }
      : invalid;
  }
  if (isIPv4(parts.host)) return { kind: 'ip', host: parts.host, ...port };
  if (parts.host.startsWith('*.')) {
    const domain = normalizeName(parts.host.slice(2));
    if (!domain) return invalid;
    if (!domain.includes('.'))
      return { error: 'must name a domain of at least two labels after "*." (like *.example.com)' };
    return { kind: 'wildcard', domain, ...port };
  }
  const host = normalizeName(parts.host);
  return host ? { kind: 'name', host, ...port } : invalid;
}

/** The normalised spelling of a rule, as policies store and show it. */
export function formatHostRule(rule: HostRule): string {
  const host =
    rule.kind === 'wildcard'
      ? `*.${rule.domain}`
      : rule.kind === 'ip' && rule.host.includes(':')
        ? `[${rule.host}]`
        : rule.host;
  return rule.port === undefined ? host : `${host}:${rule.port}`;
}

/**
 * What a client asked a proxy for (`CONNECT host:port`, or the authority of an absolute-form
 * URL), normalised like a rule; undefined when it is neither a DNS name nor an IP literal in its
 * canonical spelling (decimal, octal, hex and short IPv4 spellings are neither).
 */
export function parseRequestedHost(host: string, port: number): RequestedHost | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIPv6(bare)) return bare.includes('%') ? undefined : { kind: 'ip', host: canonicalIpv6(bare), port };
  if (host !== bare) return undefined;
  if (isIPv4(bare)) return { kind: 'ip', host: bare, port };
  const name = normalizeName(bare);
  return name ? { kind: 'name', host: name, port } : undefined;
}

/**
 * The `host:port` of a `CONNECT` request target (an IPv6 host in brackets), split but not yet
 * judged; undefined when it is not of that shape or the port is outside 1–65535.
 */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port };
}

/**
 * Whether `rule` names `requested`'s host, whatever the port (an IP rule only its own literal,
 * never a name resolving to it).
 */
export function ruleNamesHost(rule: HostRule, requested: RequestedHost): boolean {
  if (rule.kind === 'ip') return requested.kind === 'ip' && requested.host === rule.host;
  if (requested.kind !== 'name') return false;
  if (rule.kind === 'name') return requested.host === rule.host;
  return requested.host.endsWith(`.${rule.domain}`);
}
