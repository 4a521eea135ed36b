import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { ERASABLE_KINDS, eraseUserData, erasureDependencies } from '../src/admin/erasure.js';
import { deleteAgent, deleteTenant } from '../src/admin/lifecycle.js';
import { requireAgentTenant } from '../src/artifacts/artifacts.js';
import { parseUserId } from '../src/auth/user-id.js';
import type { AppDependencies } from '../src/dependencies.js';
import { isServiceError, ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { ADMIN_ROUTE, AgentParams, json, TenantParams } from './admin-schemas.js';

const AgentUserParams = AgentParams.extend({
  userId: z.string().openapi({
    param: { name: 'userId', in: 'path' },
    description: 'The user, exactly as the integrator sends it in `X-Chat-User` (same rules; URL-encoded).',
  }),
});

const EraseBody = z
  .strictObject({
    dryRun: z
      .boolean()
      .default(true)
      .openapi({ description: 'Only count what would be erased (the default); `false` erases.' }),
    include: z
      .array(z.enum(ERASABLE_KINDS))
      .max(ERASABLE_KINDS.length)
      .default([])
      .openapi({ description: 'What to erase besides the workspace, which is always erased. Default: nothing else.' }),
  })
  .openapi('EraseUserRequest');

const Counts = z
  .object({
    workspaces: z.number().int(),
    egressDecisions: z
      .number()
      .int()
      .openapi({ description: "The egress proxy's records of the workspace's connections, erased with it." }),
    uploads: z.number().int(),
    artifacts: z.number().int(),
    chats: z.number().int(),
  })
  .openapi('ErasureCounts');

const ErasureReportSchema = z
  .object({
    dryRun: z.boolean(),
    counts: Counts.openapi({
      description:
        'Erased by this request; for a dry run, what a real run would erase. Kinds not in `include` count 0.',
    }),
    remaining: Counts.openapi({
      description:
        'Still there after this request, of the workspace and the included kinds (a dry run: the same as `counts`).',
    }),
    status: z.enum(['complete', 'partial']).openapi({
      description:
        '`complete` when nothing remains. `partial` (still HTTP 200) when a step failed — a file storage could not delete keeps its record, a workspace whose sandbox backend is off or failed keeps its record — or, for a dry run, when there is something to erase. Repeating the request finishes the job.',
    }),
    usageRows: z.number().int().openapi({
      description:
        "Usage rows that named the user (a dry run: that name them now). They are kept with the user id replaced by its keyed hash, `erased:<hash>`, so the tenant's sums stay true.",
    }),
  })
  .openapi('ErasureReport');

const ForceQuery = z.strictObject({
  force: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: '`true` revokes active keys instead of refusing the delete.' }),
});

const DELETE_EFFECT =
  'Active API keys refuse the delete (409 `ACTIVE_KEYS`) unless `?force=true`, which revokes them first. Then every user of the agent is erased with everything included — workspaces (on their backend, then the records), uploads and published artifacts (bytes first, then the rows and download records) and chats — followed by the sandbox tokens, rate-limit windows, draft and published configs, keys and the agent row. When storage or the sandbox backend fails, the agent is kept with whatever is left (503) and repeating the delete finishes it.';

const eraseRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'post',
  path: '/v1/admin/agents/{agentId}/users/{userId}/erase',
  summary: "Erase one user's data within an agent (dry run by default).",
  description:
    "The workspace is always erased (its files on the sandbox backend, then its record); `include` adds the user's uploads, published artifacts (with their download records) and chats. Bytes go before rows: a file storage refuses to delete keeps its record and counts in `remaining`. Without a body this is a dry run of the workspace alone. Idempotent: once complete, a repeat erases nothing and is complete.",
  request: {
    params: AgentUserParams,
    body: { content: { 'application/json': { schema: EraseBody } }, required: false },
  },
  responses: {
    200: { description: 'What was (or would be) erased, and what is left.', ...json(ErasureReportSchema) },
    ...problemResponses(400, 401, 404, 413, 415),
  },
});

const deleteAgentRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'delete',
  path: '/v1/admin/agents/{agentId}',
  summary: 'Delete an agent and all of its data.',
  description: DELETE_EFFECT,
  request: { params: AgentParams, query: ForceQuery },
  responses: { 204: { description: 'Deleted.' }, ...problemResponses(400, 401, 404, 409, 503) },
});

const deleteTenantRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'delete',
  path: '/v1/admin/tenants/{tenantId}',
  summary: 'Delete a tenant, each of its agents and all of their data.',
  description:
    'Each agent goes exactly as `DELETE /v1/admin/agents/{agentId}` removes one, then the tenant row; active keys of any of its agents refuse it (409 `ACTIVE_KEYS`) unless `?force=true`, which revokes them first. When storage or the sandbox backend fails, the delete stops (503) with the tenant and the agents not yet deleted in place; agents already deleted stay deleted, and repeating the delete finishes it.',
  request: { params: TenantParams, query: ForceQuery },
  responses: { 204: { description: 'Deleted.' }, ...problemResponses(400, 401, 404, 409, 503) },
});

/** The path's user id under the rules of `X-Chat-User`, with an error that names the parameter. */
function pathUserId(userId: string): string {
  try {
    return parseUserId([userId]);
  } catch (error) {
    if (!isServiceError(error)) throw error;
    throw new ServiceError(
      'INVALID_USER',
      `The userId path parameter follows the rules of X-Chat-User: ${error.message}`,
    );
  }
}

/**
 * Erasure and deletion in the operator's admin API: `POST /v1/admin/agents/:agentId/users/:userId/erase`,
 * `DELETE /v1/admin/agents/:agentId` and `DELETE /v1/admin/tenants/:tenantId`. Registered by the
 * admin routes, behind the admin token and the JSON body limit.
 */
export function registerAdminLifecycleRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const erasure = erasureDependencies(deps);

  app.openapi(eraseRoute, async (c) => {
    const { agentId, userId } = c.req.valid('param');
    const verifiedUserId = pathUserId(userId);
    // Without a body the OpenAPI layer validates nothing, so the defaults are applied here.
    const { dryRun = true, include = [] } = c.req.valid('json') ?? {};
    const owner = { tenantId: await requireAgentTenant(deps.database.db, agentId), agentId, userId: verifiedUserId };
    return c.json(await eraseUserData(erasure, owner, { dryRun, include: [...new Set(include)] }), 200);
  });

  app.openapi(deleteAgentRoute, async (c) => {
    await deleteAgent(erasure, c.req.valid('param').agentId, { force: c.req.valid('query').force === 'true' });
    return c.body(null, 204);
  });

  app.openapi(deleteTenantRoute, async (c) => {
    await deleteTenant(erasure, c.req.valid('param').tenantId, { force: c.req.valid('query').force === 'true' });
    return c.body(null, 204);
  });
}
