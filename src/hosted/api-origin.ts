import { isForbiddenHostname } from '../net/address-policy.js';

/**
 * Where the hosted helpers send the agent key. Two shapes only: a literal loopback origin for a
 * trusted runtime in the same place (`selfBaseUrl`, deployment configuration — never a Host header
 * or request field), or a public HTTPS origin. Both are checked as typed, character by character,
 * so no URL-parser leniency (`127.1`, `0x7f.0.0.1`, `localhost`, stray whitespace) widens them.
 */

const SELF_HOSTS = new Set(['127.0.0.1', '[::1]']);
const PORT = /^[1-9][0-9]{0,4}$/;
/** Printable ASCII without the space: anything else (whitespace, controls, Unicode look-alikes) is refused. */
const PRINTABLE = /^[\x21-\x7e]*$/;

/** The refused value is not repeated: it may carry credentials, and messages end up in logs. */
function invalid(name: string, rule: string): TypeError {
  return new TypeError(`${name} is refused: ${rule}.`);
}

/** Splits what follows the scheme into authority and the rest, where the WHATWG parser would. */
function splitAuthority(afterScheme: string): { authority: string; rest: string } {
  const end = afterScheme.search(/[/?#\\]/);
  return end === -1
    ? { authority: afterScheme, rest: '' }
    : { authority: afterScheme.slice(0, end), rest: afterScheme.slice(end) };
}

/** Names the rule a non-empty remainder after the authority breaks (only `/` is allowed there). */
function restRule(rest: string): string | undefined {
  if (rest === '' || rest === '/') return undefined;
  if (rest.includes('?')) return 'a query is not allowed';
  if (rest.includes('#')) return 'a fragment is not allowed';
  return 'a path is not allowed (at most one trailing "/")';
}

/**
 * Validates a `selfBaseUrl` exactly as written: `http://127.0.0.1` or `http://[::1]`, optionally
 * `:<port>` (1–65535, decimal, no leading zeros), optionally one trailing `/`. Anything else — other
 * spellings of loopback, other hosts, `https`, credentials, a path, query or fragment, whitespace,
 * an uppercase scheme — throws a `TypeError` naming the rule broken.
 *
 * @returns the origin, e.g. `http://127.0.0.1:3000` (a `:80` port is dropped, as in `URL#origin`).
 * @example
 * parseSelfBaseUrl('http://127.0.0.1:3000/'); // 'http://127.0.0.1:3000'
 * parseSelfBaseUrl('http://localhost:3000'); // throws TypeError
 */
export function parseSelfBaseUrl(raw: string): string {
  const name = 'selfBaseUrl';
  if (typeof raw !== 'string') throw new TypeError(`${name} must be a string.`);
  if (!PRINTABLE.test(raw)) throw invalid(name, 'only printable ASCII without whitespace is allowed');
  if (!raw.startsWith('http://')) {
    const rule = raw.toLowerCase().startsWith('https:')
      ? 'it must use plain "http://" (loopback needs no TLS; https is for public origins)'
      : 'it must start with "http://" in lowercase';
    throw invalid(name, rule);
  }
  const { authority, rest } = splitAuthority(raw.slice('http://'.length));
  if (authority.includes('@')) throw invalid(name, 'credentials are not allowed');
  const hostEnd = authority.startsWith('[') ? authority.indexOf(']') + 1 : authority.indexOf(':');
  const host = hostEnd <= 0 ? authority : authority.slice(0, hostEnd);
  const portPart = hostEnd <= 0 ? '' : authority.slice(hostEnd);
  if (!SELF_HOSTS.has(host)) throw invalid(name, 'the host must be exactly 127.0.0.1 or [::1]');
  if (
    portPart !== '' &&
    !(portPart.startsWith(':') && PORT.test(portPart.slice(1)) && Number(portPart.slice(1)) <= 65535)
  ) {
    throw invalid(name, 'the port must be a decimal number from 1 to 65535 without leading zeros');
  }
  const rule = restRule(rest);
  if (rule) throw invalid(name, rule);
  // The character-level checks above are the rule; the WHATWG parser must agree with them.
  const url = new URL(raw);
  if (url.hostname !== host || url.pathname !== '/' || url.username !== '' || url.search !== '' || url.hash !== '') {
    throw invalid(name, 'it does not parse as the loopback origin it spells');
  }
  return url.origin;
}

/**
 * Validates the public origin of a Mordn API: `https://<host>[:port]`, optionally one trailing `/`,
 * with no credentials, path, query or fragment, and a host that is neither a loopback, private,
 * link-local or otherwise internal IP literal (in any spelling the URL parser accepts) nor an
 * internal name such as `localhost` or `*.internal`. Throws a `TypeError` naming the rule broken.
 *
 * @returns the origin, e.g. `https://api.example.com`.
 */
export function parsePublicApiOrigin(raw: string): string {
  const name = 'baseUrl';
  if (typeof raw !== 'string') throw new TypeError(`${name} must be a string.`);
  if (/[\s\p{Cc}]/u.test(raw)) throw invalid(name, 'whitespace and control characters are not allowed');
  const scheme = /^https:\/\//i.exec(raw);
  if (!scheme) throw invalid(name, 'it must be an https:// origin');
  const { authority, rest } = splitAuthority(raw.slice(scheme[0].length));
  if (authority.includes('@')) throw invalid(name, 'credentials are not allowed');
  const rule = restRule(rest);
  if (rule) throw invalid(name, rule);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(name, 'it is not a valid URL');
  }
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '' || url.pathname !== '/') {
    throw invalid(name, 'it must be an https:// origin');
  }
  if (isForbiddenHostname(url.hostname)) {
    throw invalid(name, 'the host must be public (not loopback, private, link-local or an internal name)');
  }
  return url.origin;
}

/**
 * The API origin the hosted helpers use: `selfBaseUrl` when given (see `parseSelfBaseUrl`), else
 * `baseUrl` as a public HTTPS origin (see `parsePublicApiOrigin`). Throws a `TypeError` when
 * neither is given or the chosen one is refused. `selfBaseUrl` never relaxes any other check.
 *
 * @example
 * resolveApiOrigin({ baseUrl: 'https://api.example.com', selfBaseUrl: 'http://127.0.0.1:3000' }); // 'http://127.0.0.1:3000'
 */
export function resolveApiOrigin(options: { baseUrl?: string; selfBaseUrl?: string }): string {
  if (options.selfBaseUrl !== undefined) return parseSelfBaseUrl(options.selfBaseUrl);
  if (options.baseUrl !== undefined) return parsePublicApiOrigin(options.baseUrl);
  throw new TypeError('The Mordn API origin is missing: pass baseUrl (public https) or selfBaseUrl (loopback).');
}
