import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { authenticateMetrics } from '../src/auth/authenticate.js';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { LIVENESS_BODY, LIVENESS_PATH } from '../src/liveness.js';
import { runReadinessChecks } from '../src/readiness.js';

const healthRoute = createRoute({
  method: 'get',
  path: LIVENESS_PATH,
  tags: ['Operations'],
  summary: 'Liveness: the process is up and serving HTTP.',
  description: 'Answered by the HTTP server before routing and middleware: no request id, log line or metric.',
  responses: {
    200: {
      description: 'Alive.',
      content: { 'application/json': { schema: z.object({ status: z.literal('ok') }) } },
    },
  },
});

const ReadinessSchema = z
  .object({
    status: z.enum(['ready', 'unavailable', 'draining']),
    checks: z.record(z.string(), z.enum(['ok', 'failed', 'timeout'])),
    reasons: z
      .record(z.string(), z.string())
      .optional()
      .openapi({ description: 'Why a check failed, where that names a missing host capability (sandbox limits).' }),
  })
  .openapi('Readiness');

const readinessRoute = createRoute({
  method: 'get',
  path: '/readyz',
  tags: ['Operations'],
  summary: 'Readiness: every dependency (database, storage, sandbox backend) answers.',
  responses: {
    200: { description: 'Ready.', content: { 'application/json': { schema: ReadinessSchema } } },
    503: {
      description: 'A dependency failed, or the process is shutting down.',
      content: { 'application/json': { schema: ReadinessSchema } },
    },
  },
});

const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['Operations'],
  summary: 'Prometheus metrics: requests and latency by route pattern and status.',
  description:
    'No metric names a tenant or a user. Open unless `MORDN_METRICS_TOKEN` is set; then it takes `Authorization: Bearer <MORDN_METRICS_TOKEN>`.',
  security: [{}, { metricsToken: [] }],
  responses: {
    200: { description: 'Prometheus text exposition.', content: { 'text/plain': { schema: z.string() } } },
    ...problemResponses(401),
  },
});

const READINESS_TIMEOUT_MS = 2_000;

/** What `/readyz` answers (and the console's status shows): the service's state and each check. */
export interface ServiceReadiness {
  status: 'ready' | 'unavailable' | 'draining';
  checks: Record<string, 'ok' | 'failed' | 'timeout'>;
  reasons?: Record<string, string>;
}

/** Runs every readiness check (the database, then storage and the sandbox backend) once. */
export async function checkServiceReadiness(
  deps: Pick<AppDependencies, 'database' | 'readinessChecks' | 'lifecycle'>,
  onFailure?: (name: string, error: unknown) => void,
): Promise<ServiceReadiness> {
  const checks = [{ name: 'database', check: () => deps.database.ping() }, ...(deps.readinessChecks ?? [])];
  const report = await runReadinessChecks(checks, {
    timeoutMs: READINESS_TIMEOUT_MS,
    ...(onFailure ? { onFailure } : {}),
  });
  const status = deps.lifecycle.draining ? 'draining' : report.ready ? 'ready' : 'unavailable';
  // A ready service has nothing to explain.
  const reasons = status !== 'ready' && Object.keys(report.reasons).length > 0 ? { reasons: report.reasons } : {};
  return { status, checks: report.checks, ...reasons };
}

/** `/healthz`, `/readyz` and `/metrics`: unauthenticated, side-effect free. */
export function registerHealthRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  // The served `/healthz` never reaches this handler (see src/liveness.ts); it answers the same
  // for `app.request()` and runtimes other than Node's HTTP server.
  app.openapi(healthRoute, (c) => c.json(LIVENESS_BODY, 200));

  app.openapi(readinessRoute, async (c) => {
    const readiness = await checkServiceReadiness(deps, (name, error) =>
      deps.logger.warn({ requestId: c.get('requestId'), check: name, err: error }, 'readiness check failed'),
    );
    c.header('Cache-Control', 'no-store');
    return c.json(readiness, readiness.status === 'ready' ? 200 : 503);
  });

  const metricsToken = deps.config.metricsToken;
  app.openapi(metricsRoute, async (c) => {
    if (metricsToken !== undefined) authenticateMetrics(metricsToken, c.req.header('Authorization'));
    const body = await deps.metrics.registry.metrics();
    return c.text(body, 200, { 'Content-Type': deps.metrics.registry.contentType });
  });
}
