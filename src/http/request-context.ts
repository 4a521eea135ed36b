import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Logger } from '../logger.js';
import type { HttpMetrics } from '../metrics.js';
import type { AppEnv } from './app-env.js';

export const REQUEST_ID_HEADER = 'X-Request-Id';
const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Probes are polled constantly; their access lines are debug-level to keep logs readable. */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The registered pattern that answered (`/v1/admin/agents/:agentId/keys`), never the raw path. */
export function routeLabel(c: Context<AppEnv>): string {
  const routes = matchedRoutes(c);
  for (let index = routes.length - 1; index >= 0; index -= 1) {
    const route = routes[index];
    if (route && route.method !== 'ALL') return route.path;
  }
  return 'unmatched';
}

/**
 * Sets a header on whatever response the route produces. Under Node it goes straight onto the
 * `ServerResponse`, which merges it into the head it writes; Hono's own `c.header()` would build a
 * `Headers` object for every response and cost a health check a fifth of its throughput.
 */
function setResponseHeader(c: Context<AppEnv>, name: string, value: string): void {
  const outgoing = c.env?.outgoing;
  if (outgoing) outgoing.setHeader(name, value);
  else c.header(name, value);
}

/**
 * Gives every request an id (a well-formed incoming `X-Request-Id` is kept, so traces join up
 * across services), echoes it in the response, records metrics and writes one access log line
 * (with the problem's `code` when the answer was an error: its client may be gone and never see
 * it). No header values are logged.
 */
export function requestContext(logger: Logger, metrics: HttpMetrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    metrics.requestStarted();
    const incoming = c.req.header(REQUEST_ID_HEADER);
    const requestId = incoming && INCOMING_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', requestId);
    setResponseHeader(c, REQUEST_ID_HEADER, requestId);
    try {
      await next();
    } finally {
      // Hono turns handler errors into responses; only a failing error handler leaves none.
      const status = c.finalized ? c.res.status : 500;
      const seconds = (performance.now() - started) / 1000;
      const route = routeLabel(c);
      const probe = c.get('probe') === true;
      if (probe) metrics.observeProbe(c.req.method, route);
      else metrics.observeRequest(c.req.method, route, status, seconds);
      logAccess(c, logger, { requestId, route, status, seconds, probe });
    }
  };
}

function logAccess(
  c: Context<AppEnv>,
  logger: Logger,
  entry: { requestId: string; route: string; status: number; seconds: number; probe: boolean },
): void {
  const level = entry.probe || PROBE_PATHS.has(c.req.path) ? 'debug' : 'info';
  if (logger.isLevelEnabled(level)) {
    const code = c.get('errorCode');
    logger[level](
      {
        requestId: entry.requestId,
        method: c.req.method,
        route: entry.route,
        status: entry.status,
        ...(code ? { code } : {}),
        durationMs: Math.round(entry.seconds * 1e4) / 10,
      },
      'request completed',
    );
  }
}
