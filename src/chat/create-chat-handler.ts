import { randomUUID } from 'node:crypto';
import {
  convertToModelMessages,
  createUIMessageStream,
  type LanguageModel,
  type LanguageModelUsage,
  stepCountIs,
  streamText,
  type ToolSet,
  type UIMessage,
} from 'ai';
import { type AgentConfig, isSandboxEnabled } from '../agents/config-schema.js';
import { ServiceError } from '../errors.js';
import { normalizeError, problemResponse } from '../http/problem.js';
import { DEFAULT_REQUEST_IDLE_TIMEOUT_MS, readBodyWithLimit } from '../http/request-body.js';
import { SANDBOX_TOOL_NAMES } from '../sandbox-tool-names.js';
import { type ChatTelemetryOptions, startTurnTrace } from '../telemetry/chat-spans.js';
import { failureText, isErrorChunkEcho } from './answer-failures.js';
import { createAnswerReporter } from './answer-reporter.js';
import { type AnswerRuns, answerRunsFor, type ChunkRewrite, RESUME_WINDOW_MS } from './answer-runs.js';
import { answerResponse, createAnswerSignal, sseResponse } from './answer-signal.js';
import type { AnswerKey, AnswerStore } from './answer-store.js';
import { createArtifactRelay } from './artifact-stream.js';
import { withCoalescedDeltas } from './coalesce-deltas.js';
import { chainPasses, endOnInterruption } from './end-on-interruption.js';
import { canonicalizeFileParts, referencedStoragePaths, storagePathOf } from './file-parts.js';
import { dropFinalEchoes } from './final-tool-outputs.js';
import { resignedHistory } from './history.js';
import { parseChatRequest } from './incoming-request.js';
import { type InterruptionReason, markInterrupted, settleAnswer } from './interrupted-message.js';
import { fromLanguageModelV4, isLanguageModelV4, type LanguageModelV4 } from './language-model-v4.js';
import { createLinkGuard, type WorkspaceFilePublisher } from './link-guard.js';
import { projectConversation } from './prompt-projection.js';
import { createRemoteMcpTools, type RemoteMcpServer } from './remote-mcp-tools.js';
import { createToolLease } from './tool-lease.js';
import type {
  AttachmentStorage,
  BuiltTools,
  ChatRequestContext,
  ChatScope,
  ChatStore,
  ManagedSandboxIntegration,
} from './types.js';
import { createWorkspaceFilePublisher } from './workspace-file-publisher.js';

/** The six tool names the managed integration owns; no other tool source may use them. */
export const RESERVED_TOOL_NAMES = new Set<string>(SANDBOX_TOOL_NAMES);

/** A model a host hands in: `ai@6`'s `LanguageModel`, or a model of `ai@7`'s providers. */
export type HostLanguageModel = LanguageModel | LanguageModelV4;

function toLanguageModel(model: HostLanguageModel): LanguageModel {
  return isLanguageModelV4(model) ? fromLanguageModelV4(model) : model;
}

export interface CreateChatHandlerOptions {
  /** The verified, signed-in user of a request (from the host's own session), or null. */
  getUserId(request: Request): string | null | undefined | Promise<string | null | undefined>;
  /**
   * The model, or a function choosing it from the resolved config (e.g. the agent's model id): a
   * model of `ai@6`'s providers (specification v3, or v2) or of `ai@7`'s (specification v4), or an
   * id string for the SDK's global provider.
   */
  model: HostLanguageModel | ((config: Readonly<AgentConfig>) => HostLanguageModel);
  store: ChatStore;
  storage: AttachmentStorage;
  /** The agent's published config. */
  getHostedConfig(input: { request: Request; userId: string }): Promise<AgentConfig>;
  /** `false` opts out of managed sandboxes explicitly; absent means none. */
  sandboxes?: false | ManagedSandboxIntegration;
  /** Preview routes only: the server-authorized full config (a draft) to use instead. */
  resolvePreviewConfig?(input: { request: Request; userId: string }): Promise<AgentConfig>;
  /**
   * Media types the model takes as inline bytes (default PNG, JPEG, WebP, GIF and PDF; PDF only
   * without sandboxes). Files of other types reach it as descriptors; narrow this for a provider
   * that cannot take one of them.
   */
  inlineMediaTypes?: readonly string[];
  /** Receives the safe projection (never raw documents) and may reshape it. */
  transformMessages?(messages: UIMessage[], context: ChatRequestContext): UIMessage[] | Promise<UIMessage[]>;
  /**
   * One deadline for setup, discovery and the whole answer (default 5 minutes). An answer cut
   * short by it, by the client's stop or by a lost reader is stored with its parts closed and
   * `metadata.mordn.interrupted = { reason }`.
   */
  streamTimeoutMs?: number;
  /** The host's own remote MCP servers (server configuration only); SSRF-protected. */
  mcpServers?: readonly RemoteMcpServer[];
  /** The fetch for `mcpServers` (default: the SSRF-safe fetch). */
  mcpFetch?: typeof fetch;
  /** Extra tools built per request; `sandbox_*` names are refused. */
  buildExtraTools?(context: ChatRequestContext, abortSignal: AbortSignal): Promise<BuiltTools>;
  /** Browser origins allowed to call the handler (CORS); same-origin needs none. */
  allowedOrigins?: readonly string[];
  /**
   * A request body that sends nothing for this long before it is complete is answered 408
   * `REQUEST_TIMEOUT` (default 30 s), so a stalled client holds nothing.
   */
  requestIdleTimeoutMs?: number;
  /** Model steps per answer (tool calls and their follow-ups), default 8. */
  maxSteps?: number;
  /**
   * Deltas of one text or reasoning part that follow the last one sent within this many
   * milliseconds travel as one (default 10; 0 sends each as the model does). The first delta of
   * every part is never held. Applies to model objects (`LanguageModelV3`), not to id strings.
   */
  coalesceMs?: number;
  /**
   * Called with unexpected errors (their details never reach the client). Not called for what an
   * interruption causes: that is one `onInterrupted` call.
   */
  onError?(error: unknown, requestId: string): void;
  /** Called once for an answer cut short by the client's stop, a lost reader or the deadline. */
  onInterrupted?(interruption: { reason: InterruptionReason }, requestId: string): void;
  /**
   * Resumable answers (provisional API): every answer runs through `store` — one per chat at a
   * time, its chunks logged so `GET …/:chatId/stream` can replay and follow it from any process,
   * `POST …/:chatId/stop` can stop it from anywhere, and a retried turn never runs twice.
   * `space` scopes the keys (default `''`). Without it, answers live and die with their response
   * and resuming answers 204.
   */
  answers?: { store: AnswerStore; space?: string };
  /**
   * How long an answer whose request carried `X-Chat-Resumable: 1` keeps running after its last
   * reader left (default 30 s; at most until the deadline), for a reload or another tab to
   * re-attach. Tokens keep flowing meanwhile. Needs `answers`.
   */
  detachedGraceMs?: number;
  /**
   * What the turn's OpenTelemetry spans carry (through `@opentelemetry/api`, under the host's own
   * tracer provider; nothing without one): extra attributes, and whether prompts and tool
   * arguments and results are recorded (default: never).
   */
  telemetry?: ChatTelemetryOptions;
  /**
   * Metering of the turns this handler runs (the service's own chat sets it): `admit` may refuse
   * a turn by throwing (a limit reached) before the model is called; `step` receives each
   * finished model step's usage as the model reported it (`first` for the turn's first step).
   */
  metering?: ChatMetering;
}

/** What `createChatHandler` tells a meter, and lets it refuse. */
export interface ChatMetering {
  admit(input: { request: Request; userId: string }): Promise<void>;
  step(context: ChatRequestContext, step: { usage: LanguageModelUsage | undefined; first: boolean }): void;
}

/** Web-standard route handlers, e.g. `export const { GET, POST, DELETE, OPTIONS } = createChatHandler(…)`. */
export interface ChatHandler {
  GET(request: Request): Promise<Response>;
  POST(request: Request): Promise<Response>;
  DELETE(request: Request): Promise<Response>;
  OPTIONS(request: Request): Promise<Response>;
  /** The same operations with the chat id given explicitly (for path-based routes). */
  history(request: Request, chatId: string): Promise<Response>;
  remove(request: Request, chatId: string): Promise<Response>;
  /**
   * `GET …/:chatId/stream`, what `useChat({ resume: true })` asks for: the chat's running answer
   * (or one stored within the last minute) from its first chunk, then live to its end; 204 when
   * there is none, or without `answers`.
   */
  resume(request: Request, chatId: string): Promise<Response>;
  /** `POST …/:chatId/stop`: stops the chat's running answer wherever it runs; always 204. */
  stop(request: Request, chatId: string): Promise<Response>;
}

const DEFAULT_TIMEOUT_MS = 5 * 60 * 1000;
const MAX_REQUEST_BYTES = 1024 * 1024;
const DEFAULT_COALESCE_MS = 10;
/** The path useChat's default transport reconnects to: `${api}/${chatId}/stream`. */
const RESUME_PATH = /\/([^/]+)\/stream\/?$/;
/** Where a client stops a chat's answer: `${api}/${chatId}/stop`. */
const STOP_PATH = /\/([^/]+)\/stop\/?$/;
/** The header by which a client that can stop explicitly asks for an answer that outlives it. */
export const RESUMABLE_HEADER = 'X-Chat-Resumable';
const DEFAULT_DETACHED_GRACE_MS = 30_000;
const PUBLISH_FIRST =
  'Managed sandboxes are not available for this agent: turn on "Enable sandboxes" and publish the agent first.';
const UNAVAILABLE = 'Managed sandboxes are temporarily unavailable; try again later.';

function chatIdFrom(request: Request): string {
  const chatId = new URL(request.url).searchParams.get('chatId') ?? new URL(request.url).searchParams.get('id');
  if (!chatId) throw new ServiceError('VALIDATION_FAILED', 'The chatId query parameter is required.');
  return chatId;
}

/**
 * The chat engine, as web-standard handlers. POST answers with an AI SDK v6 UI message stream:
 * the verified user's history comes from `store` (only the last user message is taken from the
 * client), the managed-sandbox gate is checked before the model starts, documents are projected
 * as untrusted references, and managed downloads appear only for carriers from a live publish.
 * Links the model writes into the workspace (`sandbox:/mnt/data/…`) become file cards of a
 * live publish, or plain text with a note; never dead links (see `createLinkGuard`).
 *
 * @example
 * export const { GET, POST, DELETE, OPTIONS } = createChatHandler({
 *   getUserId, model, store, storage, getHostedConfig,
 *   sandboxes: createHostedSandboxes({ apiKey: process.env.MORDN_CHAT_KEY!, baseUrl: 'https://api.example.com' }),
 * });
 */
export function createChatHandler(options: CreateChatHandlerOptions): ChatHandler {
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  const runs: AnswerRuns | undefined = options.answers
    ? answerRunsFor(options.answers.store, {
        settleOrphan: (record, message) =>
          storeFailedAnswer(options.store, { userId: record.key.userId }, record.key.chatId, message),
        onError: (error) => options.onError?.(error, 'answers'),
      })
    : undefined;
  const keyOf = (userId: string, chatId: string): AnswerKey => ({
    space: options.answers?.space ?? '',
    userId,
    chatId,
  });
  /** A replaying reader's file chunks get fresh links (the first reader's may have expired). */
  const resigning =
    (request: Request, userId: string): ChunkRewrite =>
    async (json) => {
      if (!json.startsWith('{"type":"file"')) return json;
      const chunk = JSON.parse(json) as Parameters<typeof storagePathOf>[0];
      const storagePath = storagePathOf(chunk);
      if (!storagePath) return json;
      const urls = await options.storage.resign({ request, userId }, [storagePath]);
      return JSON.stringify({ ...chunk, url: urls.get(storagePath) ?? '' });
    };
  const streamHeaders = (request: Request) => ({
    'Cache-Control': 'no-store',
    'X-Accel-Buffering': 'no',
    ...corsHeaders(request),
  });

  const corsHeaders = (request: Request): Record<string, string> => {
    const origin = request.headers.get('Origin');
    if (!origin || !allowedOrigins.has(origin)) return {};
    return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' };
  };

  const fail = (request: Request, error: unknown, requestId: string, logUnexpected = true): Response => {
    const { serviceError, unexpected } = normalizeError(error);
    if (unexpected !== undefined && logUnexpected) options.onError?.(unexpected, requestId);
    const response = problemResponse(serviceError, requestId);
    for (const [name, value] of Object.entries(corsHeaders(request))) response.headers.set(name, value);
    return response;
  };

  const verifiedUser = async (request: Request): Promise<string> => {
    const userId = await options.getUserId(request);
    if (!userId) throw new ServiceError('UNAUTHENTICATED', 'Sign in to chat.');
    return userId;
  };

  const history = async (request: Request, chatId: string): Promise<Response> => {
    const requestId = randomUUID();
    try {
      const userId = await verifiedUser(request);
      const messages = await options.store.loadMessages({ userId }, chatId);
      if (!messages) throw new ServiceError('NOT_FOUND', 'No such chat.');
      const body = await resignedHistory(options.storage, { request, userId }, messages);
      return Response.json(
        { id: chatId, messages: body },
        { headers: { 'Cache-Control': 'private, no-store', ...corsHeaders(request) } },
      );
    } catch (error) {
      return fail(request, error, requestId);
    }
  };

  const remove = async (request: Request, chatId: string): Promise<Response> => {
    const requestId = randomUUID();
    try {
      const userId = await verifiedUser(request);
      // A running answer is stopped and stored first; its own save never re-creates the chat.
      await runs?.stop(keyOf(userId, chatId), { wait: true });
      const messages = await options.store.loadMessages({ userId }, chatId);
      if (!messages) throw new ServiceError('NOT_FOUND', 'No such chat.');
      // Files first: a failed purge is an error and the chat keeps its references for a retry.
      // Workspace files in the sandbox are never touched.
      await options.storage.delete({ request, userId }, referencedStoragePaths(messages));
      await options.store.deleteChat({ userId }, chatId);
      await runs?.store.forget(keyOf(userId, chatId));
      return new Response(null, { status: 204, headers: corsHeaders(request) });
    } catch (error) {
      return fail(request, error, requestId);
    }
  };

  const nothing = (request: Request) =>
    new Response(null, { status: 204, headers: { 'Cache-Control': 'no-store', ...corsHeaders(request) } });

  const resume = async (request: Request, chatId: string): Promise<Response> => {
    try {
      const userId = await verifiedUser(request);
      const record = await runs?.store.find(keyOf(userId, chatId), Date.now() - RESUME_WINDOW_MS);
      if (!runs || !record) return nothing(request);
      return sseResponse(runs.read(record, resigning(request, userId)), streamHeaders(request));
    } catch (error) {
      return fail(request, error, randomUUID());
    }
  };

  const stop = async (request: Request, chatId: string): Promise<Response> => {
    try {
      const userId = await verifiedUser(request);
      await runs?.stop(keyOf(userId, chatId));
      return nothing(request);
    } catch (error) {
      return fail(request, error, randomUUID());
    }
  };

  const chat = async (request: Request): Promise<Response> => {
    const requestId = randomUUID();
    const timeoutMs = options.streamTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    const deadlineMs = timeoutMs > 0 ? timeoutMs : DEFAULT_TIMEOUT_MS;
    const deadlineAt = Date.now() + deadlineMs;
    const resumable = runs !== undefined && request.headers.get(RESUMABLE_HEADER) === '1';
    const answer = createAnswerSignal(request, deadlineMs, { followRequest: !resumable });
    /** The answer's slot, once this request holds it, and what the chat held before the turn. */
    let held: HeldTurn | undefined;
    const signal = answer.signal;
    const lease = createToolLease(signal);
    const finish = async () => {
      answer.dispose();
      await lease.release();
    };
    const report = createAnswerReporter(answer, {
      onError: (error) => options.onError?.(error, requestId),
      onInterrupted: (reason) => options.onInterrupted?.({ reason }, requestId),
    });
    const turn = startTurnTrace(options.telemetry);
    try {
      const userId = await verifiedUser(request);
      let body: unknown;
      try {
        body = JSON.parse(
          new TextDecoder().decode(
            await readBodyWithLimit(request, {
              maxBytes: MAX_REQUEST_BYTES,
              idleTimeoutMs: options.requestIdleTimeoutMs ?? DEFAULT_REQUEST_IDLE_TIMEOUT_MS,
            }),
          ),
        );
      } catch (error) {
        if (error instanceof ServiceError) throw error;
        throw new ServiceError('MALFORMED_JSON', 'The request body is not valid JSON.');
      }
      const incoming = parseChatRequest(body);
      // The chat's slot for a running answer is taken beside the config and sandbox checks, not after them.
      const answerId = randomUUID();
      const slot = runs?.acquire(keyOf(userId, incoming.chatId), {
        answerId,
        userMessageId: incoming.message?.id ?? `regenerate:${answerId}`,
      });
      const settings = (async () => {
        // A limit is checked beside the config, not after it.
        const [config] = await Promise.all([
          options.resolvePreviewConfig
            ? options.resolvePreviewConfig({ request, userId })
            : options.getHostedConfig({ request, userId }),
          options.metering?.admit({ request, userId }),
        ]);
        const context: ChatRequestContext = Object.freeze({
          request,
          userId,
          chatId: incoming.chatId,
          config: Object.freeze(config),
          abortSignal: signal,
        });
        const integration = options.sandboxes || undefined;
        if (!integration || !isSandboxEnabled(config)) return { config, context, integration, managed: false };
        const status = await integration.status(context);
        if (!status.available) {
          throw new ServiceError('MANAGED_SANDBOX_UNAVAILABLE', status.enabled ? UNAVAILABLE : PUBLISH_FIRST);
        }
        return { config, context, integration, managed: true };
      })();
      const [taken, checked] = await Promise.allSettled([slot, settings]);
      const scope = { userId };
      if (runs && taken.status === 'fulfilled' && taken.value?.acquired) {
        held = {
          answerId,
          scope,
          chatId: incoming.chatId,
          before: undefined,
          questionSaved: undefined,
          started: false,
        };
      }
      if (taken.status === 'rejected') throw taken.reason;
      if (runs && taken.value && !taken.value.acquired) {
        const { running } = taken.value;
        // A retry of the turn being answered joins it, whatever the checks of a new turn say (a
        // limit its own tokens reached, say): it starts nothing. Anything else waits for it.
        if (incoming.message && running.userMessageId === incoming.message.id) {
          await finish();
          turn.end();
          return sseResponse(runs.read(running, resigning(request, userId)), streamHeaders(request));
        }
        if (checked.status === 'rejected') throw checked.reason;
        throw new ServiceError(
          'ANSWER_IN_PROGRESS',
          'An answer of this chat is still running: wait for it to end, or stop it first.',
        );
      }
      if (checked.status === 'rejected') throw checked.reason;
      const { config, context, integration, managed } = checked.value;
      // Read after the slot is held: an answer that ended just before is in it, so a late retry is refused.
      const previous = await options.store.loadMessages(scope, incoming.chatId);
      const stored = previous ?? [];
      if (runs) refuseAnsweredTurn(stored, incoming.message);
      const conversation = buildConversation(stored, incoming.message);
      if (held) {
        // The question is stored as the turn starts (a reload or another replica shows it with the
        // running answer), beside the rest of the setup; the answer's own save waits for it.
        held.before = previous;
        held.questionSaved = options.store.saveMessages(scope, incoming.chatId, conversation).then(
          () => true,
          (error: unknown) => {
            options.onError?.(error, requestId);
            return false;
          },
        );
      }

      let projected = await projectConversation(options.storage, { request, userId }, conversation, {
        managed,
        ...(options.inlineMediaTypes ? { inlineMediaTypes: options.inlineMediaTypes } : {}),
      });
      if (options.transformMessages) projected = await options.transformMessages(projected, context);
      const modelMessages = await convertToModelMessages(projected, { ignoreIncompleteToolCalls: true });

      const relay = createArtifactRelay((value) =>
        options.onError?.(new Error(`refused a forged artifact: ${typeof value}`), requestId),
      );
      const tools: ToolSet = {};
      const extraSources: Array<Promise<BuiltTools>> = [];
      if (options.mcpServers?.length) {
        extraSources.push(
          createRemoteMcpTools(options.mcpServers, {
            abortSignal: signal,
            reserved: RESERVED_TOOL_NAMES,
            ...(options.mcpFetch ? { fetch: options.mcpFetch } : {}),
          }),
        );
      }
      if (options.buildExtraTools) extraSources.push(options.buildExtraTools(context, signal));
      for (const source of extraSources) {
        const extra = await lease.hold(source);
        for (const [name, tool] of Object.entries(extra.tools)) if (!RESERVED_TOOL_NAMES.has(name)) tools[name] = tool;
      }
      let publisher: WorkspaceFilePublisher | undefined;
      if (managed && integration) {
        const sandbox = await lease.hold(
          integration.buildTools(context, { abortSignal: signal, onArtifact: relay.accept }),
        );
        for (const [name, tool] of Object.entries(sandbox.tools)) if (RESERVED_TOOL_NAMES.has(name)) tools[name] = tool;
        publisher = createWorkspaceFilePublisher({
          integration,
          context,
          tools,
          takeCarriers: relay.take,
          abortSignal: signal,
        });
      }
      const links = createLinkGuard(publisher);
      const pass = chainPasses(dropFinalEchoes, chainPasses(relay.pass, links.pass));

      turn.tools(tools);
      const model = turn.model(
        withCoalescedDeltas(
          toLanguageModel(typeof options.model === 'function' ? options.model(context.config) : options.model),
          options.coalesceMs ?? DEFAULT_COALESCE_MS,
        ),
      );
      const stream = createUIMessageStream({
        originalMessages: conversation,
        execute: ({ writer }) => {
          const result = streamText({
            model,
            ...(config.instructions ? { system: config.instructions } : {}),
            messages: modelMessages,
            tools,
            abortSignal: signal,
            stopWhen: stepCountIs(options.maxSteps ?? 8),
            // Conversations of every tenant share the operator's provider account: ask it not to keep them.
            providerOptions: { openai: { store: false } },
            // The SDK's own spans record prompts and outputs: off; the turn's spans are ours (see `startTurnTrace`).
            experimental_telemetry: { isEnabled: false },
            // The SDK's default prints the whole error, request body (the conversation) included.
            onError: ({ error }) => report.failed(error),
            ...(options.metering ? { onStepFinish: meterSteps(options.metering, context) } : {}),
          });
          // Our steps run in this one loop over the SDK's chunks, writing each straight to the
          // answer's stream: no stream stage of their own between the SDK's.
          return endOnInterruption(
            result.toUIMessageStream({ sendReasoning: false }),
            answer,
            (chunk) => writer.write(chunk),
            pass,
          );
        },
        onError: (error) => {
          if (!isErrorChunkEcho(error)) report.failed(error);
          return failureText(answer.interruption);
        },
        onFinish: async (event) => {
          const settled = settleAnswer(event, answer.interruption);
          try {
            // With its question stored, the answer's save only updates: a chat deleted meanwhile stays deleted.
            const questionStored = held ? await held.questionSaved : false;
            await options.store.saveMessages(
              scope,
              incoming.chatId,
              settled.messages.map(canonicalizeFileParts),
              questionStored ? { mustExist: true } : undefined,
            );
          } catch (error) {
            options.onError?.(error, requestId);
          } finally {
            report.interrupted(settled.interrupted);
            turn.end(settled.interrupted);
            await finish();
          }
        },
      });
      if (runs && held) {
        held.started = true;
        const body = runs.start({
          answerId: held.answerId,
          key: keyOf(userId, incoming.chatId),
          answer,
          resumable,
          graceMs: options.detachedGraceMs ?? DEFAULT_DETACHED_GRACE_MS,
          deadlineAt,
          stream,
        });
        return sseResponse(body, streamHeaders(request));
      }
      return answerResponse(stream, { headers: streamHeaders(request), onAbandoned: answer.disconnect });
    } catch (error) {
      turn.fail(error);
      await finish();
      if (runs && held && !held.started) await undoTurn(runs, held);
      report.interrupted(answer.interruption);
      const cause = signal.aborted && signal.reason instanceof ServiceError ? signal.reason : error;
      return fail(request, cause, requestId, answer.interruption === undefined);
    }
  };

  /** A turn refused after it took its slot: the slot is given back and the chat is as it was. */
  const undoTurn = async (answers: AnswerRuns, turn: HeldTurn) => {
    try {
      const questionStored = await turn.questionSaved;
      if (questionStored && turn.before) await options.store.saveMessages(turn.scope, turn.chatId, turn.before);
      else if (questionStored) await options.store.deleteChat(turn.scope, turn.chatId);
    } catch (error) {
      options.onError?.(error, turn.answerId);
    } finally {
      await answers.abandon(turn.answerId).catch((error) => options.onError?.(error, turn.answerId));
    }
  };

  return {
    POST: async (request) => {
      const url = new URL(request.url);
      const stopped = url.searchParams.has('chatId') ? undefined : STOP_PATH.exec(url.pathname)?.[1];
      if (stopped !== undefined) return stop(request, decodeURIComponent(stopped));
      return chat(request);
    },
    GET: async (request) => {
      const url = new URL(request.url);
      // A history request names its chat in the query; useChat's resume request never does.
      const resumable = url.searchParams.has('chatId') ? undefined : RESUME_PATH.exec(url.pathname)?.[1];
      if (resumable !== undefined) return resume(request, resumable);
      try {
        return await history(request, chatIdFrom(request));
      } catch (error) {
        return fail(request, error, randomUUID());
      }
    },
    DELETE: async (request) => {
      try {
        return await remove(request, chatIdFrom(request));
      } catch (error) {
        return fail(request, error, randomUUID());
      }
    },
    OPTIONS: async (request) => {
      const headers = corsHeaders(request);
      if (Object.keys(headers).length === 0)
        return new Response(null, { status: 204, headers: { Allow: 'GET, POST, DELETE, OPTIONS' } });
      return new Response(null, {
        status: 204,
        headers: {
          ...headers,
          'Access-Control-Allow-Methods': 'GET, POST, DELETE, OPTIONS',
          'Access-Control-Allow-Headers': 'Content-Type',
          'Access-Control-Max-Age': '600',
        },
      });
    },
    history,
    remove,
    resume,
    stop,
  };
}

/** A turn's slot for its answer, held from before its question is stored until the answer runs. */
interface HeldTurn {
  answerId: string;
  scope: ChatScope;
  chatId: string;
  /** The chat's messages before the turn (undefined: there was no chat). */
  before: UIMessage[] | undefined;
  /** The question's save, once started: whether it was stored. */
  questionSaved: Promise<boolean> | undefined;
  started: boolean;
}

/**
 * Refuses a turn whose user message was answered already (a late retry, or an edit under the same
 * id): 409 `TURN_ALREADY_ANSWERED`, naming the stored answer.
 */
function refuseAnsweredTurn(stored: readonly UIMessage[], message: UIMessage | undefined): void {
  if (!message) return;
  const at = stored.findIndex((existing) => existing.id === message.id);
  if (at < 0) return;
  const answer = stored.slice(at + 1).find((existing) => existing.role === 'assistant');
  if (!answer) return;
  throw new ServiceError(
    'TURN_ALREADY_ANSWERED',
    'This message was answered already; send a new message (with a new id) or regenerate the answer.',
    { fields: { assistantMessageId: answer.id } },
  );
}

/** Each finished step's usage to the meter, the turn's first marked. */
function meterSteps(metering: ChatMetering, context: ChatRequestContext) {
  let first = true;
  return (step: { usage: LanguageModelUsage | undefined }) => {
    metering.step(context, { usage: step.usage, first });
    first = false;
  };
}

/**
 * Stores what the log of an answer whose process died holds, closed and marked
 * `interrupted: { reason: "failed" }`, in place of (or after) what the chat holds; a chat deleted
 * meanwhile stays deleted.
 */
export async function storeFailedAnswer(
  store: ChatStore,
  scope: ChatScope,
  chatId: string,
  message: UIMessage | undefined,
): Promise<void> {
  if (!message) return;
  const messages = await store.loadMessages(scope, chatId);
  if (!messages) return;
  const failed = markInterrupted(message, 'failed');
  const at = messages.findIndex((existing) => existing.id === failed.id);
  const next = at >= 0 ? messages.with(at, failed) : [...messages, failed];
  await store.saveMessages(scope, chatId, next.map(canonicalizeFileParts), { mustExist: true });
}

/**
 * The conversation to answer: the stored history plus the one new user message; for a
 * regeneration, the history up to its last user message.
 */
function buildConversation(stored: UIMessage[], message: UIMessage | undefined): UIMessage[] {
  if (message) return [...stored.filter((existing) => existing.id !== message.id), message];
  const lastUser = stored.findLastIndex((existing) => existing.role === 'user');
  if (lastUser < 0) throw new ServiceError('VALIDATION_FAILED', 'There is no user message to answer again.');
  return stored.slice(0, lastUser + 1);
}
