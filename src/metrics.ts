import { collectDefaultMetrics, type Registry as PromRegistry, Registry } from 'prom-client';

/** HTTP request metrics in a registry owned by one app (no process-global registry). */
export interface HttpMetrics {
  readonly registry: PromRegistry;
  /** Marks a request as started; `observeRequest` ends it. */
  requestStarted(): void;
  /** Records one finished request under its route pattern (never the raw path). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /**
   * Ends a request that answered a client's capability probe as expected (the MCP client's GET
   * for an event stream, answered 405): counted in `mordn_http_probes_total` only, so it never
   * reads as an error in the request metrics.
   */
  observeProbe(method: string, route: string): void;
  /**
   * Counts one recorded download of a published file in `mordn_artifact_downloads_total`, by
   * audit status. Metrics name no tenant or user: they are open to whoever reaches `/metrics`, and
   * a label per tenant would make a series per tenant. Per-tenant figures are the admin API's.
   */
  observeArtifactDownload(status: number): void;
  /** Counts one decision of the sandbox egress proxy, by decision and reason only. */
  observeEgress(decision: 'allowed' | 'refused', reason: string | null): void;
}

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const REQUESTS = 'mordn_http_requests_total';
const DURATION = 'mordn_http_request_duration_seconds';
const IN_FLIGHT = 'mordn_http_requests_in_flight';
const PROBES = 'mordn_http_probes_total';
const ARTIFACT_DOWNLOADS = 'mordn_artifact_downloads_total';
const EGRESS = 'mordn_sandbox_egress_total';

interface RouteStats {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is +Inf only. */
  buckets: Float64Array;
}

type MetricValue = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * A request counter and latency histogram labelled by method, route pattern and status, exposed
 * through a prom-client registry (with Node's process metrics when `processMetrics` is set).
 *
 * prom-client hashes the label set on every observation; on the request path that costs more
 * than the rest of a health check. Here each label set is resolved by one map lookup and the
 * prom-client exposition is built from the tallies only when `/metrics` is scraped.
 */
export function createHttpMetrics(options: { processMetrics?: boolean } = {}): HttpMetrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'mordn_' });
  const stats = new Map<string, RouteStats>();
  const probes = new Map<string, { labels: { method: string; route: string }; count: number }>();
  const downloads = new Map<number, { labels: { status: string }; count: number }>();
  const egress = new Map<string, { labels: { decision: string; reason: string }; count: number }>();
  let inFlight = 0;

  const exported = (
    name: string,
    type: 'counter' | 'gauge' | 'histogram',
    help: string,
    values: () => MetricValue[],
  ) => ({
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: 'sum' as const, values: values() }),
    reset: () => {
      stats.clear();
      probes.clear();
      downloads.clear();
      egress.clear();
    },
  });

  registry.registerMetric(
    exported(REQUESTS, 'counter', 'HTTP requests answered, by method, route pattern and status.', () =>
      [...stats.values()].map((entry) => ({ labels: entry.labels, value: entry.count })),
    ) as never,
  );
  registry.registerMetric(
    exported(
      DURATION,
      'histogram',
      'Time from request start to response headers, by method, route pattern and status.',
      () =>
        [...stats.values()].flatMap((entry) => {
          let cumulative = 0;
          const buckets = DURATION_BUCKETS.map((bound, index) => {
            cumulative += entry.buckets[index] as number;
            return { labels: { le: bound, ...entry.labels }, value: cumulative, metricName: `${DURATION}_bucket` };
          });
          return [
            ...buckets,
            { labels: { le: '+Inf', ...entry.labels }, value: entry.count, metricName: `${DURATION}_bucket` },
            { labels: entry.labels, value: entry.sum, metricName: `${DURATION}_sum` },
            { labels: entry.labels, value: entry.count, metricName: `${DURATION}_count` },
          ];
        }),
    ) as never,
  );

  registry.registerMetric(
    exported(IN_FLIGHT, 'gauge', 'HTTP requests being answered right now (this scrape included).', () => [
      { labels: {}, value: inFlight },
    ]) as never,
  );

  registry.registerMetric(
    exported(
      PROBES,
      'counter',
      'Capability probes answered as expected (the MCP client asking for an event stream), by method and route pattern; not in the request metrics.',
      () => [...probes.values()].map((entry) => ({ labels: entry.labels, value: entry.count })),
    ) as never,
  );

  registry.registerMetric(
    exported(
      ARTIFACT_DOWNLOADS,
      'counter',
      'Recorded downloads of published files, by status (200 streamed, 499 client left mid-stream, 302 redirected to storage, 404 revoked).',
      () => [...downloads.values()].map((entry) => ({ labels: entry.labels, value: entry.count })),
    ) as never,
  );

  registry.registerMetric(
    exported(
      EGRESS,
      'counter',
      'Connections sandboxed code asked the egress proxy for, by decision (allowed, refused) and refusal reason (none when allowed).',
      () => [...egress.values()].map((entry) => ({ labels: entry.labels, value: entry.count })),
    ) as never,
  );

  return {
    registry,
    requestStarted() {
      inFlight += 1;
    },
    observeRequest(method, route, status, seconds) {
      inFlight -= 1;
      const key = `${method} ${status} ${route}`;
      let entry = stats.get(key);
      if (!entry) {
        entry = {
          labels: { method, route, status: String(status) },
          count: 0,
          sum: 0,
          buckets: new Float64Array(DURATION_BUCKETS.length + 1),
        };
        stats.set(key, entry);
      }
      entry.count += 1;
      entry.sum += seconds;
      let index = 0;
      while (index < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[index] as number)) index += 1;
      (entry.buckets as Float64Array)[index] = (entry.buckets[index] as number) + 1;
    },
    observeProbe(method, route) {
      inFlight -= 1;
      const key = `${method} ${route}`;
      const entry = probes.get(key) ?? { labels: { method, route }, count: 0 };
      entry.count += 1;
      probes.set(key, entry);
    },
    observeEgress(decision, reason) {
      const key = `${decision} ${reason ?? 'none'}`;
      const entry = egress.get(key) ?? { labels: { decision, reason: reason ?? 'none' }, count: 0 };
      entry.count += 1;
      egress.set(key, entry);
    },
    observeArtifactDownload(status) {
      const entry = downloads.get(status) ?? { labels: { status: String(status) }, count: 0 };
      entry.count += 1;
      downloads.set(status, entry);
    },
  };
}
