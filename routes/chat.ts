import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { getEffectiveConfig, getPreviewConfig } from '../src/agents/agent-configs.js';
import { readBearerToken } from '../src/auth/authenticate.js';
import { type ChatHandler, createChatHandler } from '../src/chat/create-chat-handler.js';
import { agentSpace } from '../src/chat/database-answer-store.js';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import { createLanguageModel } from '../src/chat/model.js';
import { createServiceAttachmentStorage } from '../src/chat/service-attachment-storage.js';
import type { ManagedSandboxIntegration } from '../src/chat/types.js';
import type { ModelConfig } from '../src/config.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import { createApiDispatcher } from '../src/hosted/api-fetch.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import {
  DEFAULT_STREAM_TIMEOUT_MS,
  requestedStreamTimeout,
  SANDBOXES_OFF_HEADER,
  STREAM_TIMEOUT_HEADER,
  sandboxesTurnedOff,
} from '../src/hosted/proxy-headers.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, problemResponses, UserHeaderSchema } from '../src/http/openapi.js';
import { REQUEST_ID_HEADER } from '../src/http/request-context.js';
import { IN_PROCESS_ORIGIN, inProcessTransport } from '../src/http/trusted-principal.js';
import { principalAttributes } from '../src/telemetry/principal-attributes.js';
import { chatMetering } from '../src/usage/chat-metering.js';
import { ChatHistorySchema } from './chat-history-schema.js';

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
/** The lifetime of the console preview's sandbox tokens (5 minutes), renewed as they run out. */
const PREVIEW_TOKEN_SECONDS = 5 * 60;

export function registerChatRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  // A provider's model object is stateless but costly to build (it compiles its response schemas):
  // one per model id serves every request.
  const models = new Map<string, ReturnType<typeof createLanguageModel>>();
  // Every turn builds its own sandbox integration; they share one pool of loopback connections.
  const apiDispatcher = createApiDispatcher();
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

  /** The configured model; a chat turn needs one, while reading or deleting a chat does not. */
  const requireModelConfig = (): ModelConfig => {
    const modelConfig = deps.config.model;
    if (!modelConfig) {
      throw new ServiceError('MODEL_NOT_CONFIGURED', 'No model is configured: the operator must set MORDN_MODEL.');
    }
    return modelConfig;
  };

  /**
   * The sandbox integration of a turn: over loopback with the caller's agent key, or — for the
   * console preview, which holds no key — in process as its preview user, whose MCP calls carry
   * a short-lived sandbox token of that user (minted through `POST /v1/sandbox/tokens`).
   */
  const sandboxesFor = (c: Context<AppEnv>, selfBaseUrl: string): ManagedSandboxIntegration => {
    const principal = c.get('principal');
    const common = {
      selfBaseUrl,
      requestId: c.get('requestId'),
      dispatcher: apiDispatcher,
      onWarning: (message: string) => deps.logger.warn({ requestId: c.get('requestId') }, message),
    };
    if (principal.consoleSessionId === undefined) {
      return createHostedSandboxes({
        ...common,
        apiKey: readBearerToken(c.req.header('Authorization'), 'INVALID_API_KEY') ?? '',
      });
    }
    return createHostedSandboxes({
      ...common,
      apiKey: '',
      transport: inProcessTransport(app, principal),
      mcpCredential: 'userToken',
      userTokenTtlSeconds: Math.min(PREVIEW_TOKEN_SECONDS, deps.config.sandbox.tokenMaxSeconds),
    });
  };

  const handlerFor = (c: Context<AppEnv>): ChatHandler => {
    const principal = c.get('principal');
    const agent = { tenantId: principal.tenantId, agentId: principal.agentId };
    const sandboxesOff = sandboxesTurnedOff(c.req.header(SANDBOXES_OFF_HEADER));
    const preview = principal.consoleSessionId !== undefined;
    // The console preview is served in process: it needs no loopback origin of its own.
    const selfBaseUrl = preview ? (deps.selfBaseUrl ?? IN_PROCESS_ORIGIN) : deps.selfBaseUrl;
    // The deadline of one answer, setup and discovery included; a proxy in front may ask for its own.
    const streamTimeoutMs = requestedStreamTimeout(c.req.header(STREAM_TIMEOUT_HEADER), DEFAULT_STREAM_TIMEOUT_MS);
    return createChatHandler({
      getUserId: () => principal.userId,
      model: (config) => modelFor(requireModelConfig(), config.model),
      store: createDatabaseChatStore(db, agent),
      storage: createServiceAttachmentStorage(
        { db, storage: deps.storage, logger: deps.logger },
        agent,
        c.get('requestId'),
      ),
      getHostedConfig: () => getEffectiveConfig(db, principal.agentId),
      // The console preview runs the saved draft (the published config when there is none).
      ...(preview ? { resolvePreviewConfig: () => getPreviewConfig(db, principal.agentId) } : {}),
      sandboxes: sandboxesOff || !selfBaseUrl ? false : sandboxesFor(c, selfBaseUrl),
      streamTimeoutMs,
      answers: { store: deps.answers.store, space: agentSpace(agent) },
      detachedGraceMs: deps.config.chatDetachedGraceMs,
      coalesceMs: deps.config.chatCoalesceMs,
      requestIdleTimeoutMs: deps.config.requestIdleTimeoutMs,
      ...(deps.usage ? { metering: chatMetering(db, deps.usage, { ...agent, userId: principal.userId }) } : {}),
      telemetry: {
        attributes: () => principalAttributes(principal, deps.userHash),
        captureContent: deps.config.telemetry.captureContent,
      },
      onError: (error) => deps.logger.error({ requestId: c.get('requestId'), err: error }, 'chat failed'),
      onInterrupted: ({ reason }) => deps.logger.info({ requestId: c.get('requestId'), reason }, 'chat interrupted'),
    });
  };

  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/chat',
    tags: ['Chat'],
    summary: "Answer the verified user's message as an AI SDK v6 UI message stream (SSE).",
    description:
      'Body: useChat\'s default `{ id, messages, trigger }`. Only the last user message is taken from the client; history comes from the server. With managed sandboxes enabled but unavailable the answer is 503 `MANAGED_SANDBOX_UNAVAILABLE` before the model starts. The answer ends after 5 minutes, or after the `X-Mordn-Stream-Timeout-Ms` a proxy asks for (1000 to 1800000).\n\nThe user message is stored as the turn starts. A chat has one running answer: a `POST` whose last user message is the one being answered joins that answer\'s stream (one model run however many retries, on any replica); another message, or `regenerate-message`, while it runs is 409 `ANSWER_IN_PROGRESS`; a message answered already (or edited under the same id) is 409 `TURN_ALREADY_ANSWERED` with `assistantMessageId`.\n\nWith `X-Chat-Resumable: 1` (for a client that stops answers with `POST /v1/chat/{chatId}/stop`), an answer whose client goes away keeps running for `MORDN_CHAT_DETACHED_GRACE_SECONDS` (default 30; tokens keep flowing) for `GET /v1/chat/{chatId}/stream` to re-attach; with no reader by then it is stopped and stored `interrupted: { reason: "disconnect" }`. Without the header, a client that goes away stops the answer at once.',
    security: AGENT_SECURITY,
    request: {
      headers: UserHeaderSchema.extend({
        'x-chat-resumable': z
          .literal('1')
          .optional()
          .openapi({ description: 'The answer outlives its client for the detached grace (see above).' }),
      }),
      body: { required: true, content: { 'application/json': { schema: z.object({}).passthrough() } } },
    },
    responses: {
      200: { description: 'The UI message stream.', content: { 'text/event-stream': { schema: z.string() } } },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(409, 413, 415, 503),
    },
  });
  app.post('/v1/chat', agentAuth(db, 'write'), async (c) => {
    // Refused before the handler starts: no sandbox status, tools or store work for a turn that cannot run.
    requireModelConfig();
    return withRequestId(c, await handlerFor(c).POST(c.req.raw));
  });

  const resumeRoute = createRoute({
    method: 'get',
    path: '/v1/chat/{chatId}/stream',
    tags: ['Chat'],
    summary: 'Resume an answer (what `useChat({ resume: true })` and `resumeStream()` ask for), on any replica.',
    description:
      "While an answer of the chat runs, and for 60 s after it is stored: 200 with the UI message stream from its first chunk (replayed, the same message id) followed by the live chunks to its end. Replayed chunks are those the first reader received, except file chunks, whose URLs are signed anew. Past the log's bound (`MORDN_CHAT_RESUME_MAX_BYTES`) a new reader gets one `error` chunk saying the answer is too long to resume; the answer goes on. Otherwise — nothing running, or another user's chat — 204.",
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'read')] as const,
    request: { params: ChatIdParams, headers: UserHeaderSchema },
    responses: {
      200: {
        description: 'The answer, replayed and then live.',
        content: { 'text/event-stream': { schema: z.string() } },
      },
      204: { description: 'No answer to resume.' },
      ...AGENT_AUTH_RESPONSES,
    },
  });
  app.openapi(
    resumeRoute,
    async (c) => withRequestId(c, await handlerFor(c).resume(c.req.raw, c.req.valid('param').chatId)) as never,
  );

  const stopRoute = createRoute({
    method: 'post',
    path: '/v1/chat/{chatId}/stop',
    tags: ['Chat'],
    summary: "Stop the chat's running answer, on whichever replica runs it.",
    description:
      'Always 204 (idempotent; nothing running, or another user\'s chat, stops nothing). Within a second the model request and MCP execution are aborted, the sandbox process is killed, the answer is stored `interrupted: { reason: "stop" }`, and every reader\'s stream ends with an `abort` chunk.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'write')] as const,
    request: { params: ChatIdParams, headers: UserHeaderSchema },
    responses: { 204: { description: 'Asked to stop (or nothing was running).' }, ...AGENT_AUTH_RESPONSES },
  });
  app.openapi(
    stopRoute,
    async (c) => withRequestId(c, await handlerFor(c).stop(c.req.raw, c.req.valid('param').chatId)) as never,
  );

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
        description:
          'The chat, as AI SDK v6 UI messages. A file that is gone comes back `unavailable: true` with `url: ""`; an answer cut short carries `metadata.mordn.interrupted`.',
        content: { 'application/json': { schema: ChatHistorySchema } },
      },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(404),
    },
  });
  app.openapi(
    historyRoute,
    async (c) => withRequestId(c, await handlerFor(c).history(c.req.raw, c.req.valid('param').chatId)) as never,
  );

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
  app.openapi(
    deleteRoute,
    async (c) => withRequestId(c, await handlerFor(c).remove(c.req.raw, c.req.valid('param').chatId)) as never,
  );
}

/**
 * The chat engine answers its own errors as problems under an id of its own; here they get the
 * request's id instead (the caller's `X-Request-Id`, when it sent a well-formed one), in the
 * header and the body, so the answer, the access log and the caller's trace all name one id.
 */
async function withRequestId(c: Context<AppEnv>, response: Response): Promise<Response> {
  const requestId = c.get('requestId');
  const problem = response.headers.get('Content-Type') === 'application/problem+json';
  if (!problem || response.headers.get(REQUEST_ID_HEADER) === requestId) return response;
  const body = (await response.json()) as Record<string, unknown>;
  const headers = new Headers(response.headers);
  headers.set(REQUEST_ID_HEADER, requestId);
  headers.delete('Content-Length');
  return new Response(JSON.stringify({ ...body, requestId }), { status: response.status, headers });
}
