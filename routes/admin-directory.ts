import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { getAgent, getTenant, listAgents, listTenants, renameAgent, renameTenant } from '../src/tenancy/tenants.js';
import {
  ADMIN_ROUTE,
  AgentParams,
  body,
  json,
  NameBody,
  PageQuery,
  pageOf,
  pageRequest,
  TenantParams,
} from './admin-schemas.js';

const CreatedAt = z.string().openapi({ description: 'ISO 8601.' });
const TenantRecordSchema = z.object({ id: z.string(), name: z.string(), createdAt: CreatedAt }).openapi('TenantRecord');
const AgentRecordSchema = z
  .object({ id: z.string(), tenantId: z.string(), name: z.string(), createdAt: CreatedAt })
  .openapi('AgentRecord');

const listTenantsRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/tenants',
  summary: 'Every tenant, oldest first.',
  request: { query: PageQuery },
  responses: {
    200: { description: 'One page.', ...json(pageOf(TenantRecordSchema, 'TenantPage')) },
    ...problemResponses(400, 401),
  },
});

const getTenantRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/tenants/{tenantId}',
  summary: 'One tenant.',
  request: { params: TenantParams },
  responses: { 200: { description: 'The tenant.', ...json(TenantRecordSchema) }, ...problemResponses(401, 404) },
});

const renameTenantRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'patch',
  path: '/v1/admin/tenants/{tenantId}',
  summary: 'Rename a tenant (the name is checked as on create).',
  request: { params: TenantParams, ...body(NameBody) },
  responses: {
    200: { description: 'The renamed tenant.', ...json(TenantRecordSchema) },
    ...problemResponses(400, 401, 404, 413, 415),
  },
});

const listAgentsRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/tenants/{tenantId}/agents',
  summary: "A tenant's agents, oldest first.",
  request: { params: TenantParams, query: PageQuery },
  responses: {
    200: { description: 'One page.', ...json(pageOf(AgentRecordSchema, 'AgentPage')) },
    ...problemResponses(400, 401, 404),
  },
});

const getAgentRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/agents/{agentId}',
  summary: 'One agent.',
  request: { params: AgentParams },
  responses: { 200: { description: 'The agent.', ...json(AgentRecordSchema) }, ...problemResponses(401, 404) },
});

const renameAgentRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'patch',
  path: '/v1/admin/agents/{agentId}',
  summary: 'Rename an agent (the name is checked as on create).',
  request: { params: AgentParams, ...body(NameBody) },
  responses: {
    200: { description: 'The renamed agent.', ...json(AgentRecordSchema) },
    ...problemResponses(400, 401, 404, 413, 415),
  },
});

/**
 * Reading and renaming tenants and agents (`/v1/admin/tenants…`, `/v1/admin/agents/:agentId`);
 * registered by the admin routes, behind the admin token.
 */
export function registerAdminDirectoryRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;

  app.openapi(listTenantsRoute, async (c) => c.json(await listTenants(db, pageRequest(c.req.valid('query'))), 200));
  app.openapi(getTenantRoute, async (c) => c.json(await getTenant(db, c.req.valid('param').tenantId), 200));
  app.openapi(renameTenantRoute, async (c) =>
    c.json(await renameTenant(db, c.req.valid('param').tenantId, c.req.valid('json').name), 200),
  );
  app.openapi(listAgentsRoute, async (c) =>
    c.json(await listAgents(db, c.req.valid('param').tenantId, pageRequest(c.req.valid('query'))), 200),
  );
  app.openapi(getAgentRoute, async (c) => c.json(await getAgent(db, c.req.valid('param').agentId), 200));
  app.openapi(renameAgentRoute, async (c) =>
    c.json(await renameAgent(db, c.req.valid('param').agentId, c.req.valid('json').name), 200),
  );
}
