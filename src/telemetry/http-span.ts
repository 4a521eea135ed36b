import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import type { UserHash } from '../auth/user-hash.js';
import type { AppEnv } from '../http/app-env.js';
import { routeLabel } from '../http/request-context.js';
import { principalAttributes } from './principal-attributes.js';
import { extractFromHeaders } from './propagation.js';
import { mordnTracer, withinSpan } from './tracer.js';

/**
 * One SERVER span per request, joining the caller's trace (W3C `traceparent`), named by the
 * method and the route template that answered (`POST /v1/chat`): never the raw path or query,
 * which carry download signatures and user ids. After authentication it carries the tenant and
 * agent ids and the user's keyed hash. Without a tracer provider the request passes straight on.
 */
export function traceRequests(options: { userHash?: UserHash | undefined } = {}): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const method = c.req.method;
    const parent = extractFromHeaders((name) => c.req.header(name));
    const span = mordnTracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
      parent,
    );
    if (!span.isRecording()) {
      span.end();
      return next();
    }
    try {
      await withinSpan(parent, span, next);
    } finally {
      const route = routeLabel(c);
      const status = c.finalized ? c.res.status : 500;
      if (route !== 'unmatched') span.updateName(`${method} ${route}`).setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', status);
      const requestId = c.get('requestId');
      if (requestId) span.setAttribute('mordn.request.id', requestId);
      const principal = c.get('principal');
      if (principal) span.setAttributes(principalAttributes(principal, options.userHash));
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
