import type { OpenAPIHono } from '@hono/zod-openapi';
import { z } from '@hono/zod-openapi';
import { consoleSessionActor } from '../src/admin/audit-log.js';
import { previewUserId } from '../src/admin/console-sessions.js';
import { requireAgentTenant } from '../src/artifacts/artifacts.js';
import type { AgentPrincipal } from '../src/auth/permissions.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import type { AppEnv } from '../src/http/app-env.js';
import { consoleAuth } from '../src/http/console-auth.js';
import { problemResponses } from '../src/http/openapi.js';
import { IN_PROCESS_ORIGIN, inProcessTransport } from '../src/http/trusted-principal.js';

const PREVIEW_PATH = '/console/api/agents/:agentId/preview';

/** The preview chat's caller: the signed-in console session, as its own user of the agent. */
export function previewPrincipal(sessionId: string, tenantId: string, agentId: string): AgentPrincipal {
  return {
    tenantId,
    agentId,
    keyId: consoleSessionActor(sessionId),
    permissions: ['read', 'write'],
    userId: previewUserId(sessionId),
    consoleSessionId: sessionId,
  };
}

/**
 * The preview chat's history, where a chat nothing was sent in yet is empty rather than missing:
 * the console names each preview chat before its first message and loads it on every mount, and
 * a 404 there would stand for nothing wrong. Every other answer passes as it is.
 */
async function emptyUntilStarted(request: Request, response: Response): Promise<Response> {
  const chatId = new URL(request.url).searchParams.get('chatId');
  if (!chatId || response.status !== 404) return response;
  const problem = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { code?: unknown } | undefined;
  if (problem?.code !== 'NOT_FOUND') return response;
  return Response.json({ id: chatId, messages: [] }, { headers: { 'Cache-Control': 'private, no-store' } });
}

/**
 * `/console/api/agents/:agentId/preview`: the chat endpoint `<MordnChat>` talks to in the console,
 * the same one a host mounts (`createMordnHandler`: chat, uploads, history, bootstrap). It reaches
 * the API in process as the session's preview user, and `/v1/chat` runs that user's turns on the
 * agent's draft (see `registerChatRoutes`); the sandbox gate still reads the published config.
 */
export function registerConsolePreviewRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  app.openAPIRegistry.registerPath({
    method: 'post',
    path: PREVIEW_PATH.replace(':agentId', '{agentId}'),
    tags: ['Console'],
    summary: "The console's preview chat of the agent's draft (also GET ?bootstrap, GET/DELETE ?chatId).",
    description:
      "A `createMordnHandler` endpoint for `<MordnChat>`: JSON is a chat turn (an AI SDK v6 UI message stream) run on the agent's saved draft as the user `console-preview:<sessionId>`; `multipart/form-data` is an upload. When the draft enables sandboxes but the published config or the operator does not, the turn is 503 `MANAGED_SANDBOX_UNAVAILABLE` with the publish-first guidance. Sandbox calls carry a 5-minute sandbox token of that user, which ends with the session. Needs the console cookie, and `X-CSRF-Token` on POST and DELETE.",
    security: [{ consoleSession: [] }],
    request: {
      params: z.object({ agentId: z.string().openapi({ param: { name: 'agentId', in: 'path' } }) }),
      body: { required: true, content: { 'application/json': { schema: z.object({}).passthrough() } } },
    },
    responses: {
      200: { description: 'The UI message stream.', content: { 'text/event-stream': { schema: z.string() } } },
      ...problemResponses(400, 401, 403, 404, 413, 415, 503),
    },
  });

  app.on(['GET', 'POST', 'DELETE'], PREVIEW_PATH, consoleAuth(db), async (c) => {
    const { session } = c.get('console');
    const agentId = c.req.param('agentId');
    const principal = previewPrincipal(session.id, await requireAgentTenant(db, agentId), agentId);
    const handler = createMordnHandler({
      apiKey: '',
      getUserId: () => principal.userId,
      selfBaseUrl: IN_PROCESS_ORIGIN,
      transport: inProcessTransport(app, principal),
    });
    if (c.req.method === 'GET') return emptyUntilStarted(c.req.raw, await handler.GET(c.req.raw));
    if (c.req.method === 'DELETE') return handler.DELETE(c.req.raw);
    return handler.POST(c.req.raw);
  });
  app.all(PREVIEW_PATH, () => {
    throw new ServiceError('METHOD_NOT_ALLOWED', 'The preview takes GET, POST and DELETE.');
  });
}
