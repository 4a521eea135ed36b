import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { getAgent, getTenant } from '../src/tenancy/tenants.js';
import { readLimits, writeLimits } from '../src/usage/limits.js';
import { ADMIN_ROUTE, AgentParams, body, json, TenantParams } from './admin-schemas.js';

const Limit = (description: string) =>
  z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .nullable()
    .default(null)
    .openapi({ description: `${description} null (or absent): unlimited; 0 refuses everything.`, example: null });

const LimitsSchema = z
  .strictObject({
    tokensPerDay: Limit('Input + output tokens per UTC day.'),
    tokensPerMonth: Limit('Input + output tokens per UTC calendar month.'),
    sandboxCpuSecondsPerDay: Limit('Sandbox CPU-seconds per UTC day.'),
    storageBytes: Limit('Bytes of uploads and published files kept.'),
  })
  .openapi('UsageLimits');

const LimitsResponse = z
  .object({
    tokensPerDay: z.number().int().nullable(),
    tokensPerMonth: z.number().int().nullable(),
    sandboxCpuSecondsPerDay: z.number().int().nullable(),
    storageBytes: z.number().int().nullable(),
  })
  .openapi('UsageLimitsSet');

const routesOf = <Params extends typeof TenantParams | typeof AgentParams>(
  params: Params,
  path: string,
  whose: string,
) => ({
  get: createRoute({
    ...ADMIN_ROUTE,
    method: 'get',
    path,
    summary: `The usage limits of ${whose}.`,
    request: { params },
    responses: { 200: { description: 'All four limits.', ...json(LimitsResponse) }, ...problemResponses(401, 404) },
  }),
  put: createRoute({
    ...ADMIN_ROUTE,
    method: 'put',
    path,
    summary: `Sets the usage limits of ${whose}, all four at once (absent = unlimited).`,
    request: { params, ...body(LimitsSchema) },
    responses: {
      200: { description: 'The limits now in force.', ...json(LimitsResponse) },
      ...problemResponses(400, 401, 404, 413, 415),
    },
  }),
});

/**
 * `GET|PUT /v1/admin/tenants/:tenantId/limits` and `/v1/admin/agents/:agentId/limits`; registered
 * by the admin routes, behind the admin token, every change in the audit log.
 */
export function registerAdminLimitRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  const tenant = routesOf(TenantParams, '/v1/admin/tenants/{tenantId}/limits', 'a tenant');
  const agent = routesOf(
    AgentParams,
    '/v1/admin/agents/{agentId}/limits',
    "an agent (both its own and its tenant's hold)",
  );
  app.openapi(tenant.get, async (c) => {
    const { tenantId } = c.req.valid('param');
    await getTenant(db, tenantId);
    return c.json(await readLimits(db, 'tenant', tenantId), 200);
  });
  app.openapi(tenant.put, async (c) => {
    const { tenantId } = c.req.valid('param');
    await getTenant(db, tenantId);
    await writeLimits(db, 'tenant', tenantId, c.req.valid('json'), Date.now());
    return c.json(await readLimits(db, 'tenant', tenantId), 200);
  });
  app.openapi(agent.get, async (c) => {
    const { agentId } = c.req.valid('param');
    await getAgent(db, agentId);
    return c.json(await readLimits(db, 'agent', agentId), 200);
  });
  app.openapi(agent.put, async (c) => {
    const { agentId } = c.req.valid('param');
    await getAgent(db, agentId);
    await writeLimits(db, 'agent', agentId, c.req.valid('json'), Date.now());
    return c.json(await readLimits(db, 'agent', agentId), 200);
  });
}
