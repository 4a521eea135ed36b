import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { getConfigVersions, publishConfig, saveDraftConfig } from '../src/agents/agent-configs.js';
import { AgentConfigSchema } from '../src/agents/config-schema.js';
import { createApiKey, revokeApiKey } from '../src/auth/api-keys.js';
import { PERMISSIONS } from '../src/auth/permissions.js';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { adminAuth } from '../src/http/auth-middleware.js';
import { jsonBody } from '../src/http/json-body.js';
import { problemResponses } from '../src/http/openapi.js';
import { createAgent, createTenant } from '../src/tenancy/tenants.js';
import { registerAdminAgentListRoutes } from './admin-agent-lists.js';
import { auditAdminWrites, registerAdminAuditRoutes } from './admin-audit.js';
import { registerAdminDirectoryRoutes } from './admin-directory.js';
import { registerAdminEgressRoutes } from './admin-egress.js';
import { registerAdminLifecycleRoutes } from './admin-lifecycle.js';
import { registerAdminLimitRoutes } from './admin-limits.js';
import { ADMIN_ROUTE, AgentParams, body, json, NameBody, TenantParams } from './admin-schemas.js';
import { registerAdminUsageRoutes } from './admin-usage.js';
import { registerAdminArtifactRoutes } from './artifacts.js';

/** Admin bodies are small; agent configs are the largest (instructions up to 32k characters). */
const ADMIN_BODY_LIMIT = 256 * 1024;

const TenantSchema = z.object({ id: z.string(), name: z.string() }).openapi('Tenant');
const AgentSchema = z.object({ id: z.string(), tenantId: z.string(), name: z.string() }).openapi('Agent');
const PermissionsSchema = z
  .array(z.enum(PERMISSIONS))
  .min(1)
  .max(PERMISSIONS.length)
  .refine((permissions) => new Set(permissions).size === permissions.length, 'must not repeat a permission')
  .openapi({ example: ['read', 'write'] });
const CreatedKeySchema = z
  .object({
    id: z.string(),
    key: z.string().openapi({ description: 'The API key. Shown only in this response; store it now.' }),
    permissions: z.array(z.enum(PERMISSIONS)),
  })
  .openapi('CreatedApiKey');
// Rebuilt from the shape so the schema carries OpenAPI metadata; validation is identical.
const AgentConfig = z.strictObject(AgentConfigSchema.shape).openapi('AgentConfig');

const KeyParams = z.object({ keyId: z.string().openapi({ param: { name: 'keyId', in: 'path' } }) });

const createTenantRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'post',
  path: '/v1/admin/tenants',
  summary: 'Create a tenant.',
  request: body(NameBody),
  responses: { 201: { description: 'Created.', ...json(TenantSchema) }, ...problemResponses(400, 401, 413, 415) },
});

const createAgentRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'post',
  path: '/v1/admin/tenants/{tenantId}/agents',
  summary: 'Create an agent in a tenant.',
  request: { params: TenantParams, ...body(NameBody) },
  responses: { 201: { description: 'Created.', ...json(AgentSchema) }, ...problemResponses(400, 401, 404, 413, 415) },
});

const createKeyRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'post',
  path: '/v1/admin/agents/{agentId}/keys',
  summary: "Issue an API key for an agent (the key is shown only in this response; it's stored hashed).",
  request: { params: AgentParams, ...body(z.object({ permissions: PermissionsSchema })) },
  responses: {
    201: { description: 'Created.', ...json(CreatedKeySchema) },
    ...problemResponses(400, 401, 404, 413, 415),
  },
});

const revokeKeyRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'delete',
  path: '/v1/admin/keys/{keyId}',
  summary: 'Revoke a key. It fails from the next request on; revoking twice is harmless.',
  request: { params: KeyParams },
  responses: { 204: { description: 'Revoked.' }, ...problemResponses(401, 404) },
});

const putConfigRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'put',
  path: '/v1/admin/agents/{agentId}/config',
  summary: 'Save the draft config (never affects the published one).',
  request: { params: AgentParams, ...body(AgentConfig) },
  responses: {
    200: { description: 'Draft saved.', ...json(z.object({ draft: AgentConfig })) },
    ...problemResponses(400, 401, 404, 413, 415),
  },
});

const publishConfigRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'post',
  path: '/v1/admin/agents/{agentId}/config/publish',
  summary: 'Publish the current draft; only the published config counts for the API.',
  request: { params: AgentParams },
  responses: {
    200: { description: 'Published.', ...json(z.object({ published: AgentConfig })) },
    ...problemResponses(401, 404, 409),
  },
});

const getConfigRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/agents/{agentId}/config',
  summary: 'Read the draft and published configs (null when absent).',
  request: { params: AgentParams },
  responses: {
    200: {
      description: 'Both versions.',
      ...json(z.object({ draft: AgentConfig.nullable(), published: AgentConfig.nullable() })),
    },
    ...problemResponses(401, 404),
  },
});

/**
 * The operator's admin API. Only registered when `MORDN_ADMIN_TOKEN` is set; every route checks
 * the token before anything else, and every write is then recorded in the audit log.
 */
export function registerAdminRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies, adminToken: string): void {
  const { db } = deps.database;
  app.use(
    '/v1/admin/*',
    adminAuth(adminToken, db),
    auditAdminWrites(deps, (c) => c.get('adminActor')),
    jsonBody({ maxBytes: ADMIN_BODY_LIMIT, idleTimeoutMs: deps.config.requestIdleTimeoutMs }),
  );

  app.openapi(createTenantRoute, async (c) => c.json(await createTenant(db, c.req.valid('json').name), 201));

  app.openapi(createAgentRoute, async (c) =>
    c.json(await createAgent(db, c.req.valid('param').tenantId, c.req.valid('json').name), 201),
  );

  app.openapi(createKeyRoute, async (c) =>
    c.json(await createApiKey(db, c.req.valid('param').agentId, c.req.valid('json').permissions), 201),
  );

  app.openapi(revokeKeyRoute, async (c) => {
    await revokeApiKey(db, c.req.valid('param').keyId);
    return c.body(null, 204);
  });

  app.openapi(putConfigRoute, async (c) =>
    c.json({ draft: await saveDraftConfig(db, c.req.valid('param').agentId, c.req.valid('json')) }, 200),
  );

  app.openapi(publishConfigRoute, async (c) =>
    c.json({ published: await publishConfig(db, c.req.valid('param').agentId) }, 200),
  );

  app.openapi(getConfigRoute, async (c) => c.json(await getConfigVersions(db, c.req.valid('param').agentId), 200));

  registerAdminArtifactRoutes(app, deps);
  registerAdminDirectoryRoutes(app, deps);
  registerAdminAgentListRoutes(app, deps);
  registerAdminAuditRoutes(app, deps);
  registerAdminUsageRoutes(app, deps);
  registerAdminLimitRoutes(app, deps);
  registerAdminEgressRoutes(app, deps);
  registerAdminLifecycleRoutes(app, deps);
}
