import type { TelemetryConfig } from '../config.js';

/** The running SDK: `shutdown` exports what is still buffered and stops. */
export interface TracingSdk {
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK of `mordn serve` when an OTLP endpoint is configured
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), else does nothing and
 * loads nothing. The SDK and its exporter are loaded only here, so the library entry points stay
 * on `@opentelemetry/api` alone. The exporter reads the standard variables itself (endpoint,
 * headers, timeout); the service name comes from `OTEL_SERVICE_NAME` (default `mordn`) and
 * `OTEL_RESOURCE_ATTRIBUTES`. Registers the W3C trace-context propagator and the
 * AsyncLocalStorage context manager.
 *
 * @example
 * const tracing = await startTracing(config.telemetry);
 * // on shutdown:
 * await tracing?.shutdown();
 */
export async function startTracing(config: TelemetryConfig): Promise<TracingSdk | undefined> {
  if (!config.enabled) return undefined;
  const [{ NodeTracerProvider, BatchSpanProcessor }, { resourceFromAttributes, detectResources, envDetector }] =
    await Promise.all([import('@opentelemetry/sdk-trace-node'), import('@opentelemetry/resources')]);
  const exporter =
    config.protocol === 'http/json'
      ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter()
      : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  const resource = resourceFromAttributes({ 'service.name': 'mordn' }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  provider.register();
  return { shutdown: () => provider.shutdown() };
}
