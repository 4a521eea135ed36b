import { type Context, context, type Span, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';

/**
 * The tracer every Mordn span comes from. Through `@opentelemetry/api` alone: it answers with the
 * tracer provider registered in the process (the one `mordn serve` starts, or a host's own), and
 * with the API's no-op tracer when there is none — then spans cost a small object each and
 * nothing is recorded.
 */
export const mordnTracer: Tracer = trace.getTracer('mordn');

/** Ends a span as failed, naming the error's class (never its message: it may carry content). */
export function endWithError(span: Span, error: unknown): void {
  const type = error instanceof Error ? error.name : typeof error;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** Runs `fn` with `span` as the active span under `parent`, so what it calls joins the trace. */
export function withinSpan<T>(parent: Context, span: Span, fn: () => T): T {
  return context.with(trace.setSpan(parent, span), fn);
}
