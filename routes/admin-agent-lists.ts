import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { listAgentWorkspaces } from '../src/admin/agent-workspaces.js';
import { listApiKeys } from '../src/auth/api-keys.js';
import { PERMISSIONS } from '../src/auth/permissions.js';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { ADMIN_ROUTE, AgentParams, json, PageQuery, pageRequest } from './admin-schemas.js';

const IsoOrNull = (description: string) =>
  z
    .string()
    .nullable()
    .openapi({ description: `ISO 8601; ${description}` });

const KeyItemSchema = z
  .object({
    id: z.string(),
    permissions: z.array(z.enum(PERMISSIONS)),
    createdAt: z.string().openapi({ description: 'ISO 8601.' }),
    lastUsedAt: IsoOrNull('the last request it authenticated, to the minute; null if never.'),
    revokedAt: IsoOrNull('null while active.'),
  })
  .openapi('ApiKeyItem');

const LegacyKeySummarySchema = z
  .object({
    id: z.string(),
    prefix: z.string(),
    permissions: z.array(z.enum(PERMISSIONS)),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
  })
  .openapi('ApiKeySummary');

const KeyPageSchema = z
  .object({
    items: z.array(KeyItemSchema),
    nextCursor: z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last.' }),
    keys: z.array(LegacyKeySummarySchema).openapi({
      deprecated: true,
      description: 'Deprecated: the same page in the earlier shape (with `prefix`, without `lastUsedAt`). Use `items`.',
    }),
  })
  .openapi('ApiKeyPage');

const WorkspaceItemSchema = z
  .object({
    id: z.string(),
    userId: z.string().openapi({ description: 'The owner, exactly as the integrator sent it.' }),
    backend: z.string().openapi({ example: 'bwrap' }),
    bytesUsed: z.number().int().openapi({ description: 'As last measured by a tool call; 0 until one did.' }),
    fileCount: z.number().int().nullable().openapi({ description: 'Not recorded: always null in a listing.' }),
    lastUsedAt: z.string().openapi({ description: 'ISO 8601: the last tool call that used it.' }),
    deleteAfter: IsoOrNull('when retention deletes it unless it is used again; null when retention is off.'),
  })
  .openapi('AgentWorkspace');

const WorkspacePageSchema = z
  .object({
    items: z.array(WorkspaceItemSchema),
    nextCursor: z.string().nullable().openapi({ description: 'Pass as `cursor` for the next page; null on the last.' }),
  })
  .openapi('AgentWorkspacePage');

const listKeysRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/agents/{agentId}/keys',
  summary: "An agent's keys, oldest first (metadata only: never the key or its hash).",
  request: { params: AgentParams, query: PageQuery },
  responses: { 200: { description: 'One page.', ...json(KeyPageSchema) }, ...problemResponses(400, 401, 404) },
});

const listWorkspacesRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/agents/{agentId}/workspaces',
  summary: "An agent's user workspaces, oldest first, as recorded (no workspace is measured or touched).",
  request: { params: AgentParams, query: PageQuery },
  responses: { 200: { description: 'One page.', ...json(WorkspacePageSchema) }, ...problemResponses(400, 401, 404) },
});

/**
 * The lists that belong to one agent (`/v1/admin/agents/:agentId/keys`, `…/workspaces`);
 * registered by the admin routes, behind the admin token.
 */
export function registerAdminAgentListRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;

  app.openapi(listKeysRoute, async (c) => {
    const page = await listApiKeys(db, c.req.valid('param').agentId, pageRequest(c.req.valid('query')));
    return c.json(
      {
        items: page.items.map(({ prefix: _prefix, ...item }) => item),
        nextCursor: page.nextCursor,
        keys: page.items.map(({ lastUsedAt: _lastUsedAt, ...legacy }) => legacy),
      },
      200,
    );
  });

  app.openapi(listWorkspacesRoute, async (c) => {
    const page = pageRequest(c.req.valid('query'));
    const options = { retentionDays: deps.config.sandbox.retentionDays };
    return c.json(await listAgentWorkspaces(db, c.req.valid('param').agentId, page, options), 200);
  });
}
