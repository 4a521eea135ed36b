import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AppDependencies } from '../src/dependencies.js';
import { SANDBOXES_OFF_HEADER, sandboxesTurnedOff } from '../src/hosted/proxy-headers.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { jsonBody } from '../src/http/json-body.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, problemResponses, UserHeaderSchema } from '../src/http/openapi.js';
import { resolveCallerUploadPolicy } from '../src/uploads/caller-policy.js';
import { deleteFiles, resignFile, resignFiles } from '../src/uploads/file-links.js';
import { receiveUpload } from '../src/uploads/receive-upload.js';

const MAX_BATCH = 100;

/**
 * The request body as a Node stream. Under Node's HTTP server that is the incoming message itself,
 * read directly rather than through a web stream adapter (a third of an upload's overhead).
 */
function requestBody(c: Context<AppEnv>): Readable | null {
  const incoming = c.env?.incoming;
  if (incoming) return incoming;
  const body = c.req.raw.body;
  return body ? Readable.fromWeb(body as WebReadableStream<Uint8Array>) : null;
}
const JSON_LIMIT = 64 * 1024;

const FileDescriptorSchema = z
  .object({
    type: z.literal('file'),
    url: z.string(),
    storagePath: z.string(),
    filename: z.string(),
    mediaType: z.string(),
    size: z.number().int(),
  })
  .openapi('FileDescriptor');

const UploadedSchema = z
  .object({
    url: z.string().openapi({ description: 'Short-lived signed download URL (attachment).' }),
    storagePath: z.string().openapi({ example: 'uploads/3f9c1a0e5b7d2c4e6a8b0c1d2e3f4a5b' }),
    filename: z.string(),
    mediaType: z.string().openapi({ description: 'Canonical type, decided from the bytes.' }),
    size: z.number().int(),
  })
  .openapi('Upload');

const StoragePath = z.string().min(1).max(200);
const ResignBody = z
  .union([
    z.strictObject({ storagePath: StoragePath }),
    z.strictObject({ storagePaths: z.array(StoragePath).min(1).max(MAX_BATCH) }),
  ])
  .openapi('ResignRequest');
const ResignedSchema = z
  .object({ url: z.string(), file: FileDescriptorSchema.optional() })
  .openapi('Resigned', { description: '`file` is present for published artifacts.' });
const BatchResignedSchema = z
  .object({
    results: z.array(
      z.union([
        z.object({ storagePath: z.string(), url: z.string(), file: FileDescriptorSchema.optional() }),
        z.object({
          storagePath: z.string(),
          error: z.object({ status: z.literal(404), code: z.literal('NOT_FOUND') }),
        }),
      ]),
    ),
  })
  .openapi('BatchResigned');
const DeleteBody = z
  .strictObject({ storagePaths: z.array(StoragePath).min(1).max(MAX_BATCH) })
  .openapi('DeleteUploads');

/**
 * `POST /v1/uploads`, `POST /v1/uploads/resign` and `DELETE /v1/uploads`: every operation is
 * scoped to exactly the key's tenant and agent and the verified user.
 */
export function registerUploadRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  const links = { db, storage: deps.storage, logger: deps.logger };
  const uploads = {
    ...links,
    tempDir: path.join(deps.config.dataDir, 'tmp'),
    idleTimeoutMs: deps.config.requestIdleTimeoutMs,
  };
  const jsonLimits = { maxBytes: JSON_LIMIT, idleTimeoutMs: deps.config.requestIdleTimeoutMs };
  const owner = (c: { get(key: 'principal'): AppEnv['Variables']['principal'] }) => {
    const { tenantId, agentId, userId } = c.get('principal');
    return { tenantId, agentId, userId };
  };

  // The multipart body is streamed by the handler, so the route is documented here rather than
  // validated by the OpenAPI layer (which would buffer the whole body first).
  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/uploads',
    tags: ['Uploads'],
    summary: 'Upload one file (multipart field `file`). The bytes decide the type; the name and MIME sent do not.',
    security: AGENT_SECURITY,
    request: {
      headers: UserHeaderSchema,
      body: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: z.object({ file: z.string().openapi({ type: 'string', format: 'binary' }) }),
          },
        },
      },
    },
    responses: {
      201: { description: 'Stored and registered.', content: { 'application/json': { schema: UploadedSchema } } },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(408, 413, 415),
    },
  });
  app.post('/v1/uploads', agentAuth(db, 'write'), async (c) => {
    const principal = c.get('principal');
    const { policy } = await resolveCallerUploadPolicy(deps, principal, {
      sandboxesOff: sandboxesTurnedOff(c.req.header(SANDBOXES_OFF_HEADER)),
    });
    const file = await receiveUpload(uploads, owner(c), policy, {
      contentType: c.req.header('Content-Type'),
      contentLength: c.req.header('Content-Length'),
      body: requestBody(c),
      requestId: c.get('requestId'),
    });
    const url = await deps.storage.signDownloadUrl(file.storagePath, {
      filename: file.filename,
      mediaType: file.mediaType,
    });
    return c.json(
      { url, storagePath: file.storagePath, filename: file.filename, mediaType: file.mediaType, size: file.size },
      201,
    );
  });

  const resignRoute = createRoute({
    method: 'post',
    path: '/v1/uploads/resign',
    tags: ['Uploads'],
    summary: 'Fresh signed URLs for your own uploads and artifacts (one path, or up to 100).',
    description:
      'Missing, deleted and not-yours paths all answer the same 404 `NOT_FOUND` (per entry in the batch form).',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'read'), jsonBody(jsonLimits)] as const,
    request: {
      headers: UserHeaderSchema,
      body: { required: true, content: { 'application/json': { schema: ResignBody } } },
    },
    responses: {
      200: {
        description: 'Signed.',
        content: { 'application/json': { schema: z.union([ResignedSchema, BatchResignedSchema]) } },
      },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(404, 413, 415),
    },
  });
  app.openapi(resignRoute, async (c) => {
    const body = c.req.valid('json');
    if ('storagePath' in body) return c.json(await resignFile(links, owner(c), body.storagePath), 200);
    return c.json({ results: await resignFiles(links, owner(c), body.storagePaths) }, 200);
  });

  const deleteRoute = createRoute({
    method: 'delete',
    path: '/v1/uploads',
    tags: ['Uploads'],
    summary: 'Delete your own uploads and artifacts. Already-deleted paths are skipped.',
    description: 'When storage refuses a delete, the answer is 503 and the records are kept for a retry.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'write'), jsonBody(jsonLimits)] as const,
    request: {
      headers: UserHeaderSchema,
      body: { required: true, content: { 'application/json': { schema: DeleteBody } } },
    },
    responses: { 204: { description: 'Deleted.' }, ...AGENT_AUTH_RESPONSES, ...problemResponses(413, 415, 503) },
  });
  app.openapi(deleteRoute, async (c) => {
    await deleteFiles(links, owner(c), c.req.valid('json').storagePaths, c.get('requestId'));
    return c.body(null, 204);
  });
}
