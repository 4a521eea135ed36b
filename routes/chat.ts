import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { getEffectiveConfig } from '../src/agents/agent-configs.js';
import { readBearerToken } from '../src/auth/authenticate.js';
import { type ChatHandler, createChatHandler } from '../src/chat/create-chat-handler.js';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import { createLanguageModel } from '../src/chat/model.js';
import { createServiceAttachmentStorage } from '../src/chat/service-attachment-storage.js';
import type { ModelConfig } from '../src/config.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, problemResponses, UserHeaderSchema } from '../src/http/openapi.js';

/** Set by `createMordnHandler({ sandboxes: false })`: no managed sandboxes for this request. */
export const SANDBOXES_OFF_HEADER = 'X-Mordn-Sandboxes';
/** Default deadline of one answer, setup and discovery included. */
const STREAM_TIMEOUT_MS = 5 * 60 * 1000;

const ChatIdParams = z.object({
  chatId: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'chatId', in: 'path' } }),
});

/**
 * The service's own chat: the same `createChatHandler` a host would use, wired with the
 * configured model, the database store, the service's storage and — over real loopback HTTP — the
 * same managed-sandbox integration (`createHostedSandboxes`) any host gets. One engine, one
 * security path.
 */
/** Distinct model ids whose provider objects are kept between requests (agents may each pick one). */
const MAX_CACHED_MODELS = 64;

export function registerChatRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  // A provider's model object is stateless but costly to build (it compiles its response schemas):
  // one per model id serves every request.
  const models = new Map<string, ReturnType<typeof createLanguageModel>>();
  const modelFor = (modelConfig: ModelConfig, modelId?: string) => {
    const key = modelId ?? modelConfig.modelId;
    let model = models.get(key);
    if (!model) {
      if (models.size >= MAX_CACHED_MODELS) models.clear();
      model = createLanguageModel(modelConfig, modelId ? { modelId } : {});
      models.set(key, model);
    }
    return model;
  };

  const handlerFor = (c: Context<AppEnv>): ChatHandler => {
    const principal = c.get('principal');
    const modelConfig = deps.config.model;
    if (!modelConfig) {
      throw new ServiceError('MODEL_NOT_CONFIGURED', 'No model is configured: the operator must set MORDN_MODEL.');
    }
    const agent = { tenantId: principal.tenantId, agentId: principal.agentId };
    const apiKey = readBearerToken(c.req.header('Authorization'), 'INVALID_API_KEY') ?? '';
    const sandboxesOff = c.req.header(SANDBOXES_OFF_HEADER)?.toLowerCase() === 'off';
    const selfBaseUrl = deps.selfBaseUrl;
    return createChatHandler({
      getUserId: () => principal.userId,
      model: (config) => modelFor(modelConfig, config.model),
      store: createDatabaseChatStore(db, agent),
      storage: createServiceAttachmentStorage(
        { db, storage: deps.storage, logger: deps.logger },
        agent,
        c.get('requestId'),
      ),
      getHostedConfig: () => getEffectiveConfig(db, principal.agentId),
      sandboxes:
        sandboxesOff || !selfBaseUrl
          ? false
          : createHostedSandboxes({
              apiKey,
              selfBaseUrl,
              onWarning: (message) => deps.logger.warn({ requestId: c.get('requestId') }, message),
            }),
      streamTimeoutMs: STREAM_TIMEOUT_MS,
      onError: (error) => deps.logger.error({ requestId: c.get('requestId'), err: error }, 'chat failed'),
    });
  };

  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/chat',
    tags: ['Chat'],
    summary: "Answer the verified user's message as an AI SDK v6 UI message stream (SSE).",
    description:
      "Body: useChat's default `{ id, messages, trigger }`. Only the last user message is taken from the client; history comes from the server. With managed sandboxes enabled but unavailable the answer is 503 `MANAGED_SANDBOX_UNAVAILABLE` before the model starts.",
    security: AGENT_SECURITY,
    request: {
      headers: UserHeaderSchema,
      body: { required: true, content: { 'application/json': { schema: z.object({}).passthrough() } } },
    },
    responses: {
      200: { description: 'The UI message stream.', content: { 'text/event-stream': { schema: z.string() } } },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(413, 415, 503),
    },
  });
  app.post('/v1/chat', agentAuth(db, 'write'), (c) => handlerFor(c).POST(c.req.raw));

  const historyRoute = createRoute({
    method: 'get',
    path: '/v1/chats/{chatId}',
    tags: ['Chat'],
    summary: 'A chat with every file reference re-signed; missing ones come back `unavailable: true`.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'read')] as const,
    request: { params: ChatIdParams, headers: UserHeaderSchema },
    responses: {
      200: {
        description: 'The chat.',
        content: { 'application/json': { schema: z.object({ id: z.string(), messages: z.array(z.unknown()) }) } },
      },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(404),
    },
  });
  app.openapi(historyRoute, (c) => handlerFor(c).history(c.req.raw, c.req.valid('param').chatId) as never);

  const deleteRoute = createRoute({
    method: 'delete',
    path: '/v1/chats/{chatId}',
    tags: ['Chat'],
    summary: "Delete a chat and its files (uploads and published files); the sandbox's workspace is untouched.",
    description: 'When storage refuses to delete a file the answer is 503 and the chat is kept for a retry.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'write')] as const,
    request: { params: ChatIdParams, headers: UserHeaderSchema },
    responses: { 204: { description: 'Deleted.' }, ...AGENT_AUTH_RESPONSES, ...problemResponses(404, 503) },
  });
  app.openapi(deleteRoute, (c) => handlerFor(c).remove(c.req.raw, c.req.valid('param').chatId) as never);
}
