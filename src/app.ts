import type { OpenAPIHono } from '@hono/zod-openapi';
import { registerAdminRoutes } from '../routes/admin.js';
import { registerArtifactRoutes } from '../routes/artifacts.js';
import { registerBootstrapRoutes } from '../routes/bootstrap.js';
import { registerChatRoutes } from '../routes/chat.js';
import { registerConsoleRoutes } from '../routes/console.js';
import { registerDocsRoutes } from '../routes/docs.js';
import { registerFileRoutes } from '../routes/files.js';
import { registerHealthRoutes } from '../routes/health.js';
import { registerMeRoutes } from '../routes/me.js';
import { registerSandboxRoutes } from '../routes/sandbox.js';
import { registerSandboxTokenRoutes } from '../routes/sandbox-tokens.js';
import { registerUploadRoutes } from '../routes/uploads.js';
import { registerWellKnownRoutes } from '../routes/well-known.js';
import { createArtifactDownloadGuard } from './artifacts/download-guard.js';
import type { AppDependencies } from './dependencies.js';
import { ServiceError } from './errors.js';
import type { AppEnv } from './http/app-env.js';
import { createOpenApiApp, OPENAPI_INFO } from './http/openapi.js';
import { normalizeError, problemResponse } from './http/problem.js';
import { requestContext } from './http/request-context.js';
import { traceRequests } from './telemetry/http-span.js';

export type { AppDependencies } from './dependencies.js';
export type MordnApp = OpenAPIHono<AppEnv>;

/**
 * Builds the HTTP app from its dependencies without serving it: `src/main.ts` serves it, tests
 * call it over real HTTP or through `app.request()`.
 *
 * @example
 * const app = createApp(await composeDependencies(config, { logger }));
 * serve({ fetch: app.fetch, port: config.port });
 */
export function createApp(deps: AppDependencies): MordnApp {
  const app = createOpenApiApp();
  app.use('*', traceRequests({ userHash: deps.userHash }));
  app.use('*', requestContext(deps.logger, deps.metrics));

  registerHealthRoutes(app, deps);
  registerDocsRoutes(app);
  registerMeRoutes(app, deps);
  registerBootstrapRoutes(app, deps);
  registerUploadRoutes(app, deps);
  registerSandboxRoutes(app, deps);
  registerSandboxTokenRoutes(app, deps);
  registerWellKnownRoutes(app, deps);
  registerChatRoutes(app, deps);
  registerArtifactRoutes(app, deps);
  if (deps.localDownloads) {
    const artifacts = createArtifactDownloadGuard({
      db: deps.database.db,
      logger: deps.logger,
      metrics: deps.metrics,
      trustedProxies: deps.config.trustedProxies,
      retentionDays: deps.config.downloadAuditRetentionDays,
      ...(deps.usage ? { usage: deps.usage } : {}),
    });
    registerFileRoutes(app, deps.localDownloads, artifacts);
  }
  if (deps.config.adminToken) {
    registerAdminRoutes(app, deps, deps.config.adminToken);
    registerConsoleRoutes(app, deps, deps.config.adminToken);
  }

  app.notFound((c) =>
    problemResponse(new ServiceError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}.`), c.get('requestId')),
  );
  app.onError((error, c) => {
    const requestId = c.get('requestId') ?? 'unknown';
    const { serviceError, unexpected } = normalizeError(error);
    if (unexpected !== undefined) {
      deps.logger.error({ requestId, err: unexpected, method: c.req.method, path: c.req.path }, 'unhandled error');
    }
    c.set('errorCode', serviceError.code);
    return problemResponse(serviceError, requestId);
  });
  return app;
}

/** The OpenAPI 3.1 document of an app, as committed under `openapi/`. */
export function buildOpenApiDocument(app: MordnApp): unknown {
  return app.getOpenAPI31Document(OPENAPI_INFO);
}
