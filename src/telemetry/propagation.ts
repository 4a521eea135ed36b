import { type Context, context, propagation, ROOT_CONTEXT, type TextMapGetter } from '@opentelemetry/api';

/**
 * The request's headers with the active trace context added (W3C `traceparent`/`tracestate`
 * under the registered propagator), or the headers as given when there is none to add: without a
 * tracer provider nothing is added and nothing is copied.
 */
export function withTraceHeaders(headers: RequestInit['headers']): RequestInit['headers'] {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const names = Object.keys(carrier);
  if (names.length === 0) return headers;
  const merged = new Headers(headers);
  for (const name of names) merged.set(name, carrier[name] as string);
  return merged;
}

const lookupGetter: TextMapGetter<(name: string) => string | undefined> = {
  keys: () => [],
  get: (lookup, key) => lookup(key),
};

/** The trace context an incoming request carries in its headers, read through `lookup` only when asked. */
export function extractFromHeaders(lookup: (name: string) => string | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, lookup, lookupGetter);
}

/**
 * The trace context an MCP request carries in `params._meta` (`traceparent`, `tracestate`), under
 * `parent` (the HTTP request's), or `parent` itself when it carries none.
 */
export function extractFromMcpMeta(message: unknown, parent: Context): Context {
  const meta = (message as { params?: { _meta?: Record<string, unknown> } } | undefined)?.params?._meta;
  if (!meta || typeof meta.traceparent !== 'string') return parent;
  return propagation.extract(parent, meta, {
    keys: (carrier) => Object.keys(carrier),
    get: (carrier, key) => {
      const value = carrier[key];
      return typeof value === 'string' ? value : undefined;
    },
  });
}
