import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent } from 'undici';
import { isForbiddenAddress, isForbiddenHostname } from './address-policy.js';
import {
  fetchWithinExchange,
  OutboundRequestError,
  positiveOr,
  splitFetchArguments,
  startExchange,
} from './bounded-response.js';

/** Default response body limit for custom MCP servers (1 MiB, as for the Mordn API). */
export const DEFAULT_SSRF_RESPONSE_BYTES = 1024 * 1024;

/** Default deadline for one exchange with a custom MCP server, DNS resolution and body included. */
export const DEFAULT_SSRF_REQUEST_MS = 120_000;

/** One DNS answer, as `dns.promises.lookup(name, { all: true })` gives them. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Bounds of an SSRF-safe fetch, and the two test-only switches that widen it (never set them in production). */
export interface SsrfSafeFetchOptions {
  /** Deadline for one exchange, resolution and body included; non-positive means the default. */
  timeoutMs?: number;
  /** Response body limit in bytes; non-positive means the default. */
  maxResponseBytes?: number;
  /** Resolves a host name to all its addresses; default `dns.promises.lookup(name, { all: true })`. */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Test only: also allow plain `http:`. Production traffic to custom servers is HTTPS. */
  allowHttp?: boolean;
  /** Test only: replaces `isForbiddenAddress`, so a test can treat one loopback address as public. */
  isForbidden?: (address: string) => boolean;
}

function refused(message: string): OutboundRequestError {
  return new OutboundRequestError('DESTINATION_REFUSED', message);
}

async function defaultResolve(hostname: string): Promise<ResolvedAddress[]> {
  return lookup(hostname, { all: true, verbatim: true });
}

/**
 * The address a request to `hostname` will connect to: the IP literal itself, or the first of the
 * resolved addresses once every one of them has passed `isForbidden` (a name with one internal
 * answer among public ones is refused, since which answer a client uses is not ours to choose).
 */
async function checkedAddress(
  hostname: string,
  resolve: (hostname: string) => Promise<ResolvedAddress[]>,
  isForbidden: (address: string) => boolean,
): Promise<ResolvedAddress> {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) !== 0) {
    if (isForbidden(bare)) throw refused(`${bare} is not a public address.`);
    return { address: bare, family: isIP(bare) };
  }
  if (isForbiddenHostname(bare)) throw refused(`${bare} names this host or a private network.`);
  const answers = await resolve(bare);
  if (answers.length === 0) throw refused(`${bare} did not resolve to any address.`);
  for (const answer of answers) {
    if (isIP(answer.address) === 0 || isForbidden(answer.address)) {
      throw refused(`${bare} resolves to ${answer.address}, which is not a public address.`);
    }
  }
  const [first] = answers;
  if (!first) throw refused(`${bare} did not resolve to any address.`);
  return { address: first.address, family: isIP(first.address) };
}

/**
 * A connection pool for one exchange whose DNS lookup can only answer the address that was checked,
 * so a second, different answer (DNS rebinding) is never used. The URL keeps its host name, so TLS
 * still sends it as the server name and verifies the certificate against it.
 */
function pinnedAgent(hostname: string, target: ResolvedAddress): Agent {
  const pinnedLookup: LookupFunction = (name, options, callback) => {
    if (name.toLowerCase() !== hostname.toLowerCase()) {
      callback(refused(`Unexpected lookup of ${name} on a connection pinned to ${hostname}.`), '', 0);
    } else if (options.all) {
      callback(null, [target]);
    } else {
      callback(null, target.address, target.family);
    }
  };
  return new Agent({ connect: { lookup: pinnedLookup } });
}

/**
 * A fetch for operator-configured remote MCP servers that cannot be pointed at the host, its
 * private networks or its cloud metadata service. It refuses (with a `TypeError`) anything but
 * `https:`, URLs with credentials, internal names, and hosts whose resolved addresses include any
 * forbidden one (`isForbiddenAddress`); then connects only to the address it checked, re-checking
 * on every request. Redirects are refused, not followed; time and body size are bounded as for the
 * Mordn API (`timeoutMs`, `maxResponseBytes`), and the caller's signal aborts the exchange.
 *
 * @example
 * const client = await createMCPClient({ transport: { type: 'http', url, fetch: createSsrfSafeFetch() } });
 */
export function createSsrfSafeFetch(options: SsrfSafeFetchOptions = {}): typeof fetch {
  const timeoutMs = positiveOr(options.timeoutMs, DEFAULT_SSRF_REQUEST_MS);
  const maxResponseBytes = positiveOr(options.maxResponseBytes, DEFAULT_SSRF_RESPONSE_BYTES);
  const resolve = options.resolve ?? defaultResolve;
  const isForbidden = options.isForbidden ?? isForbiddenAddress;
  const schemes = options.allowHttp ? ['https:', 'http:'] : ['https:'];
  return async (input, init) => {
    const request = splitFetchArguments(input, init);
    const { url } = request;
    if (!schemes.includes(url.protocol)) throw refused(`Only ${schemes.join(' and ')} URLs are allowed.`);
    if (url.username !== '' || url.password !== '') throw refused('URLs with credentials are not allowed.');
    const exchange = startExchange(timeoutMs, request.init.signal);
    let target: ResolvedAddress;
    try {
      target = await exchange.race(checkedAddress(url.hostname, resolve, isForbidden));
    } catch (error) {
      exchange.settle();
      throw error;
    }
    const dispatcher = pinnedAgent(url.hostname, target);
    exchange.onSettled(() => void dispatcher.destroy().catch(() => undefined));
    return fetchWithinExchange(exchange, url, request.init, { dispatcher, maxResponseBytes });
  };
}
