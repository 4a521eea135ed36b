import { Agent, type Dispatcher } from 'undici';
import {
  type ExchangeTransport,
  fetchWithinExchange,
  OutboundRequestError,
  positiveOr,
  splitFetchArguments,
  startExchange,
} from '../net/bounded-response.js';
import { withTraceHeaders } from '../telemetry/propagation.js';

/** The most one Mordn API response may carry (1 MiB, as the API bounds tool results); options may lower it. */
export const MAX_API_RESPONSE_BYTES = 1024 * 1024;

/** The longest one Mordn API exchange may take (120 s, the longest tool call); options may lower it. */
export const MAX_API_REQUEST_MS = 120_000;

/** Where an API fetch may go and how far one exchange may run; fixed when the fetch is created. */
export interface ApiFetchOptions {
  /** The only origin requests may go to, as returned by `resolveApiOrigin` (e.g. `http://127.0.0.1:3000`). */
  origin: string;
  /** Paths requests may go to; each must be anchored with `^` so it cannot match a suffix of some other path. */
  allowedPaths: readonly RegExp[];
  /** Response body limit in bytes; default and ceiling `MAX_API_RESPONSE_BYTES`. */
  maxResponseBytes?: number;
  /** Deadline for a whole exchange, body included; default and ceiling `MAX_API_REQUEST_MS`. */
  timeoutMs?: number;
  /** Connection pool to use instead of a private undici `Agent`. */
  dispatcher?: Dispatcher;
  /** Carries requests in process instead of over the network (see `ExchangeTransport`). */
  transport?: ExchangeTransport;
}

/**
 * The deadline an API fetch actually uses for `timeoutMs`: a positive value up to
 * `MAX_API_REQUEST_MS`, else `MAX_API_REQUEST_MS`. `0`, negative and non-finite values do not
 * unbound it: a misconfigured caller still cannot hold a request open forever.
 */
export function effectiveTimeout(timeoutMs?: number): number {
  return positiveOr(timeoutMs, MAX_API_REQUEST_MS, MAX_API_REQUEST_MS);
}

function normalisedOrigin(origin: string): string {
  const url = new URL(origin);
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin.replace(/\/$/, '')) {
    throw new TypeError(`The API transport needs a bare http(s) origin (got "${origin}").`);
  }
  return url.origin;
}

/** A copy without the `g`/`y` flags, whose `lastIndex` state would make `test` answer differently each call. */
function statelessPattern(pattern: RegExp): RegExp {
  if (!pattern.source.startsWith('^')) {
    throw new TypeError(`Allowed API paths must be anchored with "^" (got ${pattern}).`);
  }
  return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
}

/** Where an origin-bound fetch may go and the bounds of one exchange, given exactly (no ceiling of its own). */
export interface OriginFetchOptions {
  /** The only origin requests may go to, as returned by `resolveApiOrigin`. */
  origin: string;
  /** Paths requests may go to; each must be anchored with `^`. */
  allowedPaths: readonly RegExp[];
  /** Response body limit in bytes (a positive number). */
  maxResponseBytes: number;
  /** Deadline for a whole exchange, body included, in milliseconds (a positive number). */
  timeoutMs: number;
  /** Connection pool to use instead of a private undici `Agent`. */
  dispatcher?: Dispatcher;
  /** Carries requests in process instead of over the network (see `ExchangeTransport`). */
  transport?: ExchangeTransport;
}

/**
 * A fetch confined to one origin and a set of paths, with exactly the bounds given: the
 * transport of `createApiFetch` without its sandbox-call ceilings. `createMordnHandler` uses it
 * for chat streams, whose bounds are the handler's own (`streamTimeoutMs` and its stream
 * ceiling), not the 1 MiB / 120 s of one sandbox call. Refusals, redirects and the body limit
 * behave as described for `createApiFetch`.
 */
export function createOriginFetch(options: OriginFetchOptions): typeof fetch {
  const origin = normalisedOrigin(options.origin);
  const allowedPaths = options.allowedPaths.map(statelessPattern);
  for (const [name, value] of [
    ['maxResponseBytes', options.maxResponseBytes],
    ['timeoutMs', options.timeoutMs],
  ] as const) {
    if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number (got ${value}).`);
  }
  const { maxResponseBytes, timeoutMs } = options;
  const dispatcher = options.dispatcher ?? new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  return async (input, init) => {
    const request = splitFetchArguments(input, init);
    if (request.url.origin !== origin) {
      throw new OutboundRequestError('DESTINATION_REFUSED', `The API transport only reaches ${origin}.`);
    }
    if (!allowedPaths.some((pattern) => pattern.test(request.url.pathname))) {
      throw new OutboundRequestError(
        'DESTINATION_REFUSED',
        `The API transport does not reach ${request.url.pathname}.`,
      );
    }
    const exchange = startExchange(timeoutMs, request.init.signal);
    // The API's spans join the caller's trace (W3C `traceparent`), when there is one.
    const traced: RequestInit = { ...request.init };
    const headers = withTraceHeaders(request.init.headers);
    if (headers !== undefined) traced.headers = headers;
    return fetchWithinExchange(exchange, request.url, traced, {
      dispatcher,
      maxResponseBytes,
      transport: options.transport,
    });
  };
}

/**
 * A fetch for talking to the Mordn API with an agent key, safe to hand to `@ai-sdk/mcp`'s HTTP
 * transport. Because the key must never leave for anywhere else, it refuses (with a `TypeError`,
 * before any network I/O) URLs outside `origin` or whose path matches none of `allowedPaths`, and
 * never follows redirects (a 3xx is an error). Every exchange is bounded: the deadline covers the
 * body as well, the caller's `signal` aborts it, and the body (SSE streams included) errors past
 * `maxResponseBytes` and closes the connection. Both bounds are those of one sandbox call and
 * can only be lowered. It sends no cookies; request headers pass as given.
 *
 * @example
 * const origin = resolveApiOrigin({ selfBaseUrl: 'http://127.0.0.1:3000' });
 * const apiFetch = createApiFetch({ origin, allowedPaths: [/^\/v1\/sandbox\/mcp$/] });
 * await apiFetch(`${origin}/v1/sandbox/mcp`, { method: 'POST', headers, body }); // allowed
 * await apiFetch(`${origin}/v1/admin/tenants`); // TypeError, nothing sent
 */
/**
 * A connection pool for API fetches that many integrations share (the service's own chat route
 * builds one integration per request; each would otherwise open its own connections). Its
 * timeouts are the ceiling of one exchange, which every fetch bounds further itself.
 */
export function createApiDispatcher(): Dispatcher {
  return new Agent({ headersTimeout: MAX_API_REQUEST_MS, bodyTimeout: MAX_API_REQUEST_MS });
}

export function createApiFetch(options: ApiFetchOptions): typeof fetch {
  return createOriginFetch({
    ...options,
    maxResponseBytes: positiveOr(options.maxResponseBytes, MAX_API_RESPONSE_BYTES, MAX_API_RESPONSE_BYTES),
    timeoutMs: effectiveTimeout(options.timeoutMs),
  });
}
