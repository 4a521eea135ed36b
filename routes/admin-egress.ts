import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { listTenantEgress } from '../src/sandbox/egress/egress-log.js';
import { getTenant } from '../src/tenancy/tenants.js';
import { ADMIN_ROUTE, json, PageQuery, pageOf, pageRequest, TenantParams } from './admin-schemas.js';

const REASONS = ['policy', 'egress_off', 'private_address', 'port', 'method', 'limit', 'resolve_failed'] as const;

const EgressDecisionSchema = z
  .object({
    at: z.string().openapi({ description: 'ISO 8601: when the connection was asked for.' }),
    agentId: z.string(),
    userId: z.string(),
    workspaceId: z.string(),
    host: z.string().openapi({ description: 'The host as the sandboxed client asked for it.', example: 'pypi.org' }),
    port: z.number().int(),
    address: z.string().nullable().openapi({
      description: 'The checked address connected to, or the refused one; null when refused before resolving.',
    }),
    decision: z.enum(['allowed', 'refused']),
    reason: z.enum(REASONS).nullable().openapi({ description: 'Why it was refused; null when allowed.' }),
    bytesUp: z.number().int().openapi({ description: 'Bytes the sandbox sent (allowed connections).' }),
    bytesDown: z.number().int().openapi({ description: 'Bytes the sandbox received (allowed connections).' }),
    durationMs: z.number().int(),
    count: z
      .number()
      .int()
      .openapi({ description: 'Identical refusals within 10 s of the first share its row; 1 otherwise.' }),
  })
  .openapi('EgressDecision');

const listEgressRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/tenants/{tenantId}/egress',
  summary: "The sandbox egress decisions of a tenant's workspaces, newest first.",
  description:
    "One row per connection the policy proxy allowed (written when it closed, with its bytes) and per refusal (identical refusals within 10 s share a row and count). Kept for MORDN_SANDBOX_EGRESS_LOG_RETENTION_DAYS days; a user's erasure removes theirs.",
  request: { params: TenantParams, query: PageQuery },
  responses: {
    200: { description: 'One page.', ...json(pageOf(EgressDecisionSchema, 'EgressDecisionPage')) },
    ...problemResponses(400, 401, 404),
  },
});

/** `GET /v1/admin/tenants/:tenantId/egress`; registered by the admin routes, behind the admin token. */
export function registerAdminEgressRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  app.openapi(listEgressRoute, async (c) => {
    const { tenantId } = c.req.valid('param');
    await getTenant(db, tenantId);
    return c.json(await listTenantEgress(db, tenantId, pageRequest(c.req.valid('query'))), 200);
  });
}
