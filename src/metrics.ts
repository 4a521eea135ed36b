import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** HTTP request metrics in a registry owned by one app (no process-global registry). */
export interface HttpMetrics {
  readonly registry: Registry;
  /** Records one finished request under its route pattern (never the raw path). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
}

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * Creates the request counter and latency histogram, labelled by method, route pattern and
 * status. `processMetrics` adds Node's default process metrics (on in the service, off in tests).
 */
export function createHttpMetrics(options: { processMetrics?: boolean } = {}): HttpMetrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'mordn_' });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'mordn_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'mordn_http_request_duration_seconds',
    help: 'Time from request start to response headers, by method, route pattern and status.',
    labelNames,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  // Label lookups hash their arguments; cache the children so a hot route pays that once.
  const children = new Map<
    string,
    { count: ReturnType<typeof requests.labels>; latency: ReturnType<typeof duration.labels> }
  >();
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const key = `${method} ${status} ${route}`;
      let child = children.get(key);
      if (!child) {
        const labels = { method, route, status: String(status) };
        child = { count: requests.labels(labels), latency: duration.labels(labels) };
        children.set(key, child);
      }
      child.count.inc();
      child.latency.observe(seconds);
    },
  };
}
