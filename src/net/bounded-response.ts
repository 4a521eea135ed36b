import { type Dispatcher, type RequestInit as UndiciRequestInit, fetch as undiciFetch } from 'undici';
import { formatBytes } from '../format.js';

/**
 * The bounds every outbound HTTP exchange of the service shares, whoever decides where it may go
 * (the hosted API transport, the SSRF-safe fetch for custom MCP servers): one deadline covering
 * connection, headers and the whole body; the caller's abort signal; redirects refused rather than
 * followed; and a response body limit enforced while streaming, not after buffering.
 */

/** Why an outbound request was refused. Every refusal is a `TypeError`, as fetch's own failures are. */
export type OutboundRefusal = 'DESTINATION_REFUSED' | 'REDIRECT_REFUSED' | 'RESPONSE_TOO_LARGE';

/** A refused outbound request: its destination, a redirect, or a response over the byte limit. */
export class OutboundRequestError extends TypeError {
  override readonly name = 'OutboundRequestError';
  readonly code: OutboundRefusal;

  constructor(code: OutboundRefusal, message: string) {
    super(message);
    this.code = code;
  }
}

/** `value` when it is a positive finite number, else `fallback`; never more than `maximum`. */
export function positiveOr(value: number | undefined, fallback: number, maximum = Number.POSITIVE_INFINITY): number {
  const chosen = value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
  return Math.min(chosen, maximum);
}

/**
 * The URL and init of a fetch call, whatever form the caller used: a string, a `URL`, or a
 * `Request` (possibly from another fetch implementation, so it is read field by field). Throws a
 * `TypeError` for a URL that does not parse.
 */
export function splitFetchArguments(
  input: string | URL | Request,
  init: RequestInit = {},
): { url: URL; init: RequestInit } {
  if (typeof input === 'string' || input instanceof URL) return { url: new URL(input), init: { ...init } };
  const fromRequest: RequestInit = {
    method: input.method,
    headers: input.headers,
    body: input.body,
    signal: input.signal,
    ...(input.body ? { duplex: 'half' } : {}),
  };
  return { url: new URL(input.url), init: { ...fromRequest, ...init } };
}

/**
 * One request/response exchange under a deadline. `signal` aborts when the deadline passes, the
 * caller's signal aborts, or `abort()` is called; `settle()` ends the exchange (timer cleared,
 * caller listener removed, `onSettled` callbacks run) once its body is finished or it failed.
 */
export interface Exchange {
  readonly signal: AbortSignal;
  abort(reason: unknown): void;
  settle(): void;
  onSettled(callback: () => void): void;
  /** `promise`, or a rejection as soon as the exchange is aborted (for work fetch cannot cancel). */
  race<T>(promise: Promise<T>): Promise<T>;
}

/** Starts an exchange; the deadline runs from now. */
export function startExchange(timeoutMs: number, callerSignal?: AbortSignal | null): Exchange {
  const controller = new AbortController();
  const callbacks: Array<() => void> = [];
  let settled = false;
  const settle = (): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', forwardCallerAbort);
    for (const callback of callbacks) callback();
  };
  const abort = (reason: unknown): void => {
    controller.abort(reason);
    settle();
  };
  const forwardCallerAbort = (): void => abort(callerSignal?.reason);
  const timer = setTimeout(
    () => abort(new DOMException(`The request did not complete within ${timeoutMs} ms.`, 'TimeoutError')),
    timeoutMs,
  );
  if (callerSignal?.aborted) abort(callerSignal.reason);
  else callerSignal?.addEventListener('abort', forwardCallerAbort, { once: true });
  return {
    signal: controller.signal,
    abort,
    settle,
    onSettled(callback) {
      if (settled) callback();
      else callbacks.push(callback);
    },
    race(promise) {
      if (controller.signal.aborted) return Promise.reject(controller.signal.reason);
      return new Promise((resolve, reject) => {
        const onAbort = (): void => reject(controller.signal.reason);
        controller.signal.addEventListener('abort', onAbort, { once: true });
        promise.then(resolve, reject).finally(() => controller.signal.removeEventListener('abort', onAbort));
      });
    },
  };
}

function tooLarge(maxBytes: number): OutboundRequestError {
  return new OutboundRequestError(
    'RESPONSE_TOO_LARGE',
    `The response body exceeds the ${formatBytes(maxBytes)} limit.`,
  );
}

/**
 * A stream passing `body` through until more than `maxBytes` have gone by, then erroring (and
 * aborting the exchange, which closes the connection) instead of delivering the excess.
 */
function boundedBody(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  exchange: Exchange,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let received = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          exchange.settle();
          controller.close();
          return;
        }
        received += value.byteLength;
        if (received > maxBytes) {
          const error = tooLarge(maxBytes);
          exchange.abort(error);
          await reader.cancel(error).catch(() => undefined);
          controller.error(error);
          return;
        }
        controller.enqueue(value);
      } catch (error) {
        exchange.settle();
        controller.error(error);
      }
    },
    async cancel(reason) {
      exchange.abort(reason);
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}

/**
 * What carries an exchange instead of the network: an in-process handler (the service's own
 * `app.fetch`) given the same URL and init. Every bound of the exchange still applies.
 */
export type ExchangeTransport = (url: URL, init: RequestInit) => Promise<Response>;

/** Statuses whose responses cannot carry a body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * Fetches `url` through `dispatcher` within `exchange`: redirects are refused (never followed) and
 * the response body is limited to `maxResponseBytes`, by its declared `Content-Length` and again
 * while streaming. The result is an ordinary `Response` whose body reading (`json()`, `text()`, a
 * reader for SSE) ends the exchange; an abandoned body is cut off by the deadline.
 */
export async function fetchWithinExchange(
  exchange: Exchange,
  url: URL,
  init: RequestInit,
  options: { dispatcher: Dispatcher; maxResponseBytes: number; transport?: ExchangeTransport | undefined },
): Promise<Response> {
  let response: Response | Awaited<ReturnType<typeof undiciFetch>>;
  try {
    if (options.transport) {
      response = await options.transport(url, { ...init, signal: exchange.signal, redirect: 'manual' });
    } else {
      // The global and undici RequestInit types describe the same fetch standard but differ in
      // detail (undici adds `dispatcher`); the fields set here are the ones both accept.
      const undiciInit = { ...init, signal: exchange.signal, redirect: 'manual', dispatcher: options.dispatcher };
      response = await undiciFetch(url, undiciInit as UndiciRequestInit);
    }
  } catch (error) {
    exchange.settle();
    throw error;
  }
  const refuse = (error: OutboundRequestError): never => {
    exchange.abort(error);
    throw error;
  };
  if ((response.status >= 300 && response.status < 400) || response.type === 'opaqueredirect') {
    refuse(
      new OutboundRequestError(
        'REDIRECT_REFUSED',
        `Redirects are not followed (got ${response.status} from ${url.origin}).`,
      ),
    );
  }
  const declared = response.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > options.maxResponseBytes) {
    refuse(tooLarge(options.maxResponseBytes));
  }
  const headers = new Headers();
  for (const [name, value] of response.headers) headers.append(name, value);
  const responseInit = { status: response.status, statusText: response.statusText, headers };
  if (!response.body || NULL_BODY_STATUSES.has(response.status)) {
    await response.body?.cancel().catch(() => undefined);
    exchange.settle();
    return new Response(null, responseInit);
  }
  return new Response(boundedBody(response.body, options.maxResponseBytes, exchange), responseInit);
}
