import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { type AdminActor, appendAdminWrite, listAdminAudit } from '../src/admin/audit-log.js';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { READ_METHODS } from '../src/http/console-auth.js';
import { problemResponses } from '../src/http/openapi.js';
import { ADMIN_ROUTE, json, PageQuery, pageOf, pageRequest } from './admin-schemas.js';

const AuditEntrySchema = z
  .object({
    id: z.string(),
    at: z.string().openapi({ description: 'ISO 8601: when the write was answered.' }),
    actor: z.string().openapi({
      description: '`admin:` + the first 12 hex characters of sha256(admin token), or `console:<session id>`.',
      example: 'admin:3f9c1a0e5b7d',
    }),
    method: z.string().openapi({ example: 'POST' }),
    route: z.string().openapi({
      description: 'The route pattern that answered (`unmatched` when none did).',
      example: '/v1/admin/agents/:agentId/keys',
    }),
    target: z.record(z.string(), z.string()).openapi({
      description: 'The path parameters of the request.',
      example: { agentId: 'agt_3f9c1a0e5b7d2c4e6a8b0c1d' },
    }),
    requestId: z.string(),
    status: z.number().int().openapi({ description: 'The HTTP status of the answer.' }),
    outcome: z.enum(['ok', 'failed']).openapi({ description: '`ok` for a status below 400.' }),
  })
  .openapi('AdminAuditEntry');

const listAuditRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/audit',
  summary: 'The audit log of admin writes, newest first.',
  description:
    'One row per admin request other than GET, HEAD and OPTIONS, written after it was answered, whatever its outcome (requests refused for a missing or wrong admin token are not recorded). Rows hold no request or response bodies and no credentials, and are never changed.',
  request: { query: PageQuery },
  responses: {
    200: { description: 'One page.', ...json(pageOf(AuditEntrySchema, 'AdminAuditPage')) },
    ...problemResponses(400, 401),
  },
});

/** The registered pattern that answered, never the raw path; `unmatched` when no route did. */
function routePattern(c: Context<AppEnv>): string {
  const routes = matchedRoutes(c);
  for (let index = routes.length - 1; index >= 0; index -= 1) {
    const route = routes[index];
    if (route && route.method !== 'ALL') return route.path;
  }
  return 'unmatched';
}

/** The path parameters, read by laying the pattern over the path (`/:agentId/` ↔ `/agt_…/`). */
function pathParameters(pattern: string, path: string): Record<string, string> {
  const names = pattern.split('/');
  const values = path.split('/');
  const parameters: Record<string, string> = {};
  if (names.length !== values.length) return parameters;
  names.forEach((segment, index) => {
    if (!segment.startsWith(':')) return;
    const raw = values[index] ?? '';
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // A malformed escape is kept as sent: the route answered it anyway.
    }
    parameters[segment.slice(1).replace(/\{.*$/, '')] = value;
  });
  return parameters;
}

/**
 * Records every admin write in the audit log once its handler has answered (so routes added
 * later are covered without code of their own): actor, method, route pattern, path parameters,
 * request id and status. Bodies and headers are never read. Install it after the admin token
 * check and before the body parser, so malformed and oversized bodies are recorded too. A failed
 * audit write is logged at error level and never changes the answer.
 */
export function auditAdminWrites(
  deps: Pick<AppDependencies, 'database' | 'logger'>,
  actorOf: (c: Context<AppEnv>) => AdminActor,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (READ_METHODS.has(c.req.method)) return;
    const route = routePattern(c);
    const requestId = c.get('requestId');
    try {
      await appendAdminWrite(deps.database.db, {
        actor: actorOf(c),
        method: c.req.method,
        route,
        target: route === 'unmatched' ? {} : pathParameters(route, c.req.path),
        requestId,
        status: c.res.status,
      });
    } catch (error) {
      deps.logger.error(
        { requestId, err: error, method: c.req.method, route, status: c.res.status },
        'admin audit write failed',
      );
    }
  };
}

/** `GET /v1/admin/audit`; registered by the admin routes, behind the admin token. */
export function registerAdminAuditRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  app.openapi(listAuditRoute, async (c) => c.json(await listAdminAudit(db, pageRequest(c.req.valid('query'))), 200));
}
