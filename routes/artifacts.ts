import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import {
  getArtifact,
  listArtifacts,
  requireAgentArtifactOwner,
  requireAgentTenant,
  revokeAllArtifacts,
  setArtifactRevoked,
} from '../src/artifacts/artifacts.js';
import { hasDownloads, listDownloads } from '../src/artifacts/download-audit.js';
import type { Database } from '../src/db/database.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { jsonBody } from '../src/http/json-body.js';
import {
  ADMIN_SECURITY,
  AGENT_AUTH_RESPONSES,
  AGENT_SECURITY,
  problemResponses,
  UserHeaderSchema,
} from '../src/http/openapi.js';
import { FILE_NOT_FOUND_MESSAGE } from '../src/uploads/file-links.js';
import type { FileOwner } from '../src/uploads/file-registry.js';
import { PAGE_QUERY_FIELDS, pageOf as pageSchema } from './page-query.js';

const JSON_LIMIT = 16 * 1024;

const StoragePath = z
  .string()
  .min(1)
  .max(200)
  .openapi({ description: 'The artifact, as published.', example: 'artifacts/3f9c1a0e5b7d2c4e6a8b0c1d2e3f4a5b' });

const ArtifactSchema = z
  .object({
    storagePath: z.string(),
    filename: z.string(),
    mediaType: z.string(),
    size: z.number().int(),
    createdAt: z.string().openapi({ description: 'ISO 8601.' }),
    state: z.enum(['active', 'revoked']),
    revokedAt: z.string().nullable().openapi({ description: 'ISO 8601 while revoked; null while active.' }),
    chatIds: z.array(z.string()).openapi({ description: "The owner's stored chats that reference this file." }),
  })
  .openapi('Artifact');

const DownloadRecordSchema = z
  .object({
    id: z.string(),
    storagePath: z.string(),
    tenantId: z.string(),
    agentId: z.string(),
    userId: z.string().openapi({ description: 'The user the link was minted for (the owner).' }),
    downloadedAt: z.string().openapi({ description: 'ISO 8601: when the request arrived.' }),
    clientIp: z.string().nullable().openapi({
      description: 'The socket peer, or the `X-Forwarded-For` client when the peer is in `MORDN_TRUSTED_PROXIES`.',
    }),
    userAgent: z.string().nullable(),
    status: z.number().int().openapi({
      description:
        '200 streamed to the end, 499 the client left mid-stream, 302 redirected to storage (S3), 404 refused (revoked).',
    }),
    bytes: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'Bytes sent by the service; null for a redirect or a refusal.' }),
  })
  .openapi('ArtifactDownload');

const ArtifactPage = pageSchema(ArtifactSchema, 'ArtifactPage');
const DownloadPage = pageSchema(DownloadRecordSchema, 'ArtifactDownloadPage');

const PageQuery = PAGE_QUERY_FIELDS;
const ListQuery = z.strictObject(PageQuery);
const DownloadsQuery = z.strictObject({ storagePath: StoragePath, ...PageQuery });
const AdminListQuery = z.strictObject({
  userId: z.string().min(1).max(256).openapi({ description: 'The owner, exactly as sent by the integrator.' }),
  ...PageQuery,
});
const StoragePathBody = z.strictObject({ storagePath: StoragePath }).openapi('ArtifactReference');

const AgentParams = z.object({ agentId: z.string().openapi({ param: { name: 'agentId', in: 'path' } }) });
const AgentUserParams = AgentParams.extend({
  userId: z
    .string()
    .min(1)
    .max(256)
    .openapi({ param: { name: 'userId', in: 'path' } }),
});

const json = <Schema extends z.ZodType>(schema: Schema) => ({ content: { 'application/json': { schema } } });
const body = <Schema extends z.ZodType>(schema: Schema) => ({ body: { ...json(schema), required: true } });

const user = { tags: ['Artifacts'], security: AGENT_SECURITY };
const admin = { tags: ['Admin'], security: ADMIN_SECURITY };

const REVOKE_EFFECT =
  'Revocation is per stored object: every link to it fails from the next request on (in every conversation that references it), `POST /v1/uploads/resign` answers 404 and chat history shows it unavailable. Its bytes are kept; restore brings everything back. A download already streaming completes; under S3 a redirect already followed may complete within its 60 s.';

const listRoute = (db: Database['db']) =>
  createRoute({
    ...user,
    method: 'get',
    path: '/v1/artifacts',
    summary: 'Your published files, newest first, each with its state and the chats that reference it.',
    middleware: [agentAuth(db, 'read', { rejectAnonymous: true })] as const,
    request: { headers: UserHeaderSchema, query: ListQuery },
    responses: { 200: { description: 'One page.', ...json(ArtifactPage) }, ...AGENT_AUTH_RESPONSES },
  });

const stateRoute = (db: Database['db'], action: 'revoke' | 'restore', idleTimeoutMs: number) =>
  createRoute({
    ...user,
    method: 'post',
    path: `/v1/artifacts/${action}`,
    summary:
      action === 'revoke'
        ? 'Revoke one of your published files: every link to it stops working at once.'
        : 'Restore a revoked file: its links, re-signing and history work again.',
    description: `${REVOKE_EFFECT} Missing and not-yours paths answer the same 404 \`NOT_FOUND\`.`,
    middleware: [
      agentAuth(db, 'write', { rejectAnonymous: true }),
      jsonBody({ maxBytes: JSON_LIMIT, idleTimeoutMs }),
    ] as const,
    request: { headers: UserHeaderSchema, ...body(StoragePathBody) },
    responses: {
      200: { description: 'The artifact after the change.', ...json(ArtifactSchema) },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(404, 413, 415),
    },
  });

const downloadsRoute = (db: Database['db']) =>
  createRoute({
    ...user,
    method: 'get',
    path: '/v1/artifacts/downloads',
    summary: 'The download records of one of your published files, newest first.',
    description: 'Missing and not-yours paths answer the same 404 `NOT_FOUND`.',
    middleware: [agentAuth(db, 'read', { rejectAnonymous: true })] as const,
    request: { headers: UserHeaderSchema, query: DownloadsQuery },
    responses: {
      200: { description: 'One page.', ...json(DownloadPage) },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(404),
    },
  });

const adminListRoute = createRoute({
  ...admin,
  method: 'get',
  path: '/v1/admin/agents/{agentId}/artifacts',
  summary: "A user's published files of this agent, newest first.",
  request: { params: AgentParams, query: AdminListQuery },
  responses: { 200: { description: 'One page.', ...json(ArtifactPage) }, ...problemResponses(400, 401, 404) },
});

const adminStateRoute = (action: 'revoke' | 'restore') =>
  createRoute({
    ...admin,
    method: 'post',
    path: `/v1/admin/agents/{agentId}/artifacts/${action}`,
    summary: action === 'revoke' ? 'Revoke a published file of this agent.' : 'Restore a revoked file of this agent.',
    description: `${REVOKE_EFFECT} A path that is not this agent's answers 404 \`NOT_FOUND\`.`,
    request: { params: AgentParams, ...body(StoragePathBody) },
    responses: {
      200: { description: 'The artifact after the change.', ...json(ArtifactSchema) },
      ...problemResponses(400, 401, 404, 413, 415),
    },
  });

const adminDownloadsRoute = createRoute({
  ...admin,
  method: 'get',
  path: '/v1/admin/agents/{agentId}/artifacts/downloads',
  summary: 'The download records of a published file of this agent, newest first.',
  request: { params: AgentParams, query: DownloadsQuery },
  responses: { 200: { description: 'One page.', ...json(DownloadPage) }, ...problemResponses(400, 401, 404) },
});

const adminRevokeAllRoute = createRoute({
  ...admin,
  method: 'post',
  path: '/v1/admin/agents/{agentId}/users/{userId}/artifacts/revoke-all',
  summary: "Revoke every active published file of one user of this agent (each file's revocation as above).",
  request: { params: AgentUserParams },
  responses: {
    200: {
      description: 'How many files were revoked now.',
      ...json(z.object({ revoked: z.number().int() }).openapi('RevokedAll')),
    },
    ...problemResponses(401, 404),
  },
});

/** The downloads of an owner's artifact; 404 unless it exists or has records, like a missing one. */
async function ownedDownloads(
  db: Database['db'],
  owner: FileOwner,
  query: { storagePath: string; limit: number; cursor?: string | undefined },
) {
  const exists = await getArtifact(db, owner, query.storagePath).then(
    () => true,
    () => false,
  );
  if (!exists && !(await hasDownloads(db, owner, query.storagePath))) {
    throw new ServiceError('NOT_FOUND', FILE_NOT_FOUND_MESSAGE);
  }
  return listDownloads(db, owner, query.storagePath, pageOf(query));
}

function pageOf(query: { limit: number; cursor?: string | undefined }): { limit: number; cursor?: string } {
  return { limit: query.limit, ...(query.cursor === undefined ? {} : { cursor: query.cursor }) };
}

/**
 * The artifact lifecycle for the user (`/v1/artifacts…`): list, revoke, restore and the download
 * audit, each scoped to exactly the key's tenant and agent and the verified user.
 */
export function registerArtifactRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  const owner = (c: { get(key: 'principal'): AppEnv['Variables']['principal'] }): FileOwner => {
    const { tenantId, agentId, userId } = c.get('principal');
    return { tenantId, agentId, userId };
  };

  app.openapi(listRoute(db), async (c) => c.json(await listArtifacts(db, owner(c), pageOf(c.req.valid('query'))), 200));
  app.openapi(stateRoute(db, 'revoke', deps.config.requestIdleTimeoutMs), async (c) =>
    c.json(await setArtifactRevoked(db, owner(c), c.req.valid('json').storagePath, true), 200),
  );
  app.openapi(stateRoute(db, 'restore', deps.config.requestIdleTimeoutMs), async (c) =>
    c.json(await setArtifactRevoked(db, owner(c), c.req.valid('json').storagePath, false), 200),
  );
  app.openapi(downloadsRoute(db), async (c) => c.json(await ownedDownloads(db, owner(c), c.req.valid('query')), 200));
}

/**
 * The operator's artifact routes (`/v1/admin/agents/:agentId/artifacts…`); registered by the
 * admin routes, behind the admin token. Files are identified by storage path, within the agent.
 */
export function registerAdminArtifactRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;

  app.openapi(adminListRoute, async (c) => {
    const { agentId } = c.req.valid('param');
    const query = c.req.valid('query');
    const tenantId = await requireAgentTenant(db, agentId);
    return c.json(await listArtifacts(db, { tenantId, agentId, userId: query.userId }, pageOf(query)), 200);
  });

  for (const action of ['revoke', 'restore'] as const) {
    app.openapi(adminStateRoute(action), async (c) => {
      const { agentId } = c.req.valid('param');
      const { storagePath } = c.req.valid('json');
      const fileOwner = await requireAgentArtifactOwner(db, agentId, storagePath);
      return c.json(await setArtifactRevoked(db, fileOwner, storagePath, action === 'revoke'), 200);
    });
  }

  app.openapi(adminDownloadsRoute, async (c) => {
    const { agentId } = c.req.valid('param');
    const query = c.req.valid('query');
    const tenantId = await requireAgentTenant(db, agentId);
    const row = await db
      .selectFrom('artifact_downloads')
      .select('user_id')
      .where('storage_path', '=', query.storagePath)
      .where('agent_id', '=', agentId)
      .limit(1)
      .executeTakeFirst();
    const fileOwner = await requireAgentArtifactOwner(db, agentId, query.storagePath).catch((error: unknown) => {
      if (row) return { tenantId, agentId, userId: row.user_id };
      throw error;
    });
    return c.json(await listDownloads(db, fileOwner, query.storagePath, pageOf(query)), 200);
  });

  app.openapi(adminRevokeAllRoute, async (c) => {
    const { agentId, userId } = c.req.valid('param');
    const tenantId = await requireAgentTenant(db, agentId);
    return c.json({ revoked: await revokeAllArtifacts(db, { tenantId, agentId, userId }) }, 200);
  });
}
