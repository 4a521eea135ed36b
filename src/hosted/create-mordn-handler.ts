import { randomUUID } from 'node:crypto';
import { ServiceError } from '../errors.js';
import { normalizeError, problemResponse } from '../http/problem.js';
import { type ExchangeTransport, positiveOr } from '../net/bounded-response.js';
import { createOriginFetch } from './api-fetch.js';
import { resolveApiOrigin } from './api-origin.js';
import {
  DEFAULT_STREAM_TIMEOUT_MS,
  MAX_STREAM_TIMEOUT_MS,
  MIN_STREAM_TIMEOUT_MS,
  SANDBOXES_OFF_HEADER,
  STREAM_TIMEOUT_HEADER,
} from './proxy-headers.js';

export interface MordnHandlerOptions {
  /** The agent API key; it stays on the server. `''` sends none (a `transport` that vouches for its caller). */
  apiKey: string;
  /** The verified, signed-in user of a request (from the host's own session), or null. */
  getUserId(request: Request): string | null | undefined | Promise<string | null | undefined>;
  /** The public HTTPS origin of the Mordn API. */
  baseUrl?: string;
  /** A literal loopback origin for a runtime next to the API (see `createHostedSandboxes`). */
  selfBaseUrl?: string;
  /**
   * Deadline of one answer (default 5 minutes, at most 30): the API ends its run there itself,
   * and this handler stops streaming shortly after.
   */
  streamTimeoutMs?: number;
  /** The most bytes one answer stream may carry before it is cut off (default 64 MiB). */
  maxStreamBytes?: number;
  /** `false` turns managed sandboxes off for this handler, whatever the agent's config says. */
  sandboxes?: false;
  /**
   * Carries the API's requests in process instead of over the network (the service's own
   * `app.fetch`); the origin, path, redirect and size rules still apply.
   */
  transport?: ExchangeTransport;
}

export interface MordnHandler {
  GET(request: Request): Promise<Response>;
  POST(request: Request): Promise<Response>;
  DELETE(request: Request): Promise<Response>;
  OPTIONS(request: Request): Promise<Response>;
}

const MAX_CHAT_REQUEST_BYTES = 1024 * 1024;
const MAX_UPLOAD_BYTES = 10 * 1024 * 1024 + 64 * 1024;
/** A long answer with tool output can pass 1 MiB by far; it is still bounded. */
const DEFAULT_MAX_STREAM_BYTES = 64 * 1024 * 1024;
/** The API ends a run at the deadline itself; this much later the handler gives up on it too. */
const DEADLINE_GRACE_MS = 10_000;
/** Asks the API for an answer that outlives its request; only the exact value `1` is passed on. */
const RESUMABLE_HEADER = 'X-Chat-Resumable';
/** What a request may do to one chat by path (`…/:chatId/<action>`). */
type ChatAction = 'stream' | 'stop';
const PASSED_HEADERS = [
  'content-type',
  'cache-control',
  'x-vercel-ai-ui-message-stream',
  'x-accel-buffering',
  'x-request-id',
  'retry-after',
];

/**
 * Route handlers for a Next.js App Router route that talk to a Mordn API on the browser's
 * behalf: the agent key never leaves the server, and the user is the one `getUserId` verified.
 *
 * - `POST` with JSON: a chat turn (useChat's default body); the UI message stream is passed
 *   through as it arrives, and a browser that goes away aborts the API request. The request's
 *   `X-Chat-Resumable: 1` is passed on: the answer then keeps running without the browser for a
 *   while and can be re-attached.
 * - `POST …/:chatId/stop`: stops the chat's running answer wherever it runs (the API's 204).
 * - `POST` with `multipart/form-data`: an upload (field `file`).
 * - `GET ?chatId=…`: the chat's history with fresh file URLs; `GET ?bootstrap`: widget features;
 *   `GET …/:chatId/stream` (useChat's resume): the running or just-finished answer from its
 *   start, or 204 when there is nothing to resume.
 * - `DELETE ?chatId=…`: delete the chat and its files.
 *
 * @example
 * export const { GET, POST, DELETE, OPTIONS } = createMordnHandler({
 *   apiKey: process.env.MORDN_CHAT_KEY!, getUserId: verifiedUserIdFromServerSession,
 *   baseUrl: 'https://api.example.com', streamTimeoutMs: 90_000,
 * });
 */
export function createMordnHandler(options: MordnHandlerOptions): MordnHandler {
  const origin = resolveApiOrigin({
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
    ...(options.selfBaseUrl === undefined ? {} : { selfBaseUrl: options.selfBaseUrl }),
  });
  const timeoutMs = streamDeadline(options.streamTimeoutMs);
  // Chat streams are bounded by the handler's own deadline and ceiling, not by the 1 MiB / 120 s
  // of a sandbox call: a long answer may pass both.
  const apiFetch = createOriginFetch({
    origin,
    allowedPaths: [
      /^\/v1\/chat$/,
      /^\/v1\/chat\/[^/]+\/stream$/,
      /^\/v1\/chat\/[^/]+\/stop$/,
      /^\/v1\/chats\/[^/]+$/,
      /^\/v1\/uploads$/,
      /^\/v1\/bootstrap$/,
    ],
    maxResponseBytes: positiveOr(options.maxStreamBytes, DEFAULT_MAX_STREAM_BYTES),
    timeoutMs: timeoutMs + DEADLINE_GRACE_MS,
    ...(options.transport === undefined ? {} : { transport: options.transport }),
  });

  const forward = async (
    request: Request,
    path: string,
    init: { method: string; body?: RequestInit['body']; contentType?: string; headers?: Record<string, string> },
  ): Promise<Response> => {
    const userId = await options.getUserId(request);
    if (!userId) throw new ServiceError('UNAUTHENTICATED', 'Sign in to chat.');
    const headers: Record<string, string> = {
      ...(options.apiKey === '' ? {} : { Authorization: `Bearer ${options.apiKey}` }),
      'X-Chat-User': userId,
      ...(init.contentType ? { 'Content-Type': init.contentType } : {}),
      ...(options.sandboxes === false ? { [SANDBOXES_OFF_HEADER]: 'off' } : {}),
      ...init.headers,
    };
    const upstream = await apiFetch(`${origin}${path}`, {
      method: init.method,
      headers,
      ...(init.body === undefined ? {} : { body: init.body, duplex: 'half' }),
      signal: request.signal,
    } as RequestInit);
    const passed = new Headers();
    for (const name of PASSED_HEADERS) {
      const value = upstream.headers.get(name);
      if (value !== null) passed.set(name, value);
    }
    return new Response(upstream.body, { status: upstream.status, headers: passed });
  };

  const guarded =
    (run: (request: Request) => Promise<Response>) =>
    async (request: Request): Promise<Response> => {
      try {
        return await run(request);
      } catch (error) {
        const { serviceError } = normalizeError(
          error instanceof ServiceError
            ? error
            : new ServiceError('UPSTREAM_UNAVAILABLE', 'The chat service is unavailable.'),
        );
        return problemResponse(serviceError, randomUUID());
      }
    };

  const chatPath = (request: Request): string => {
    const chatId = new URL(request.url).searchParams.get('chatId');
    if (!chatId) throw new ServiceError('VALIDATION_FAILED', 'The chatId query parameter is required.');
    return `/v1/chats/${encodeURIComponent(chatId)}`;
  };

  /** The `:chatId` of a `…/:chatId/<action>` request (never one that names `?chatId=`), else undefined. */
  const actionSegment = (request: Request, action: ChatAction): string | undefined => {
    const url = new URL(request.url);
    if (url.searchParams.has('chatId')) return undefined;
    return new RegExp(`/([^/]+)/${action}/?$`).exec(url.pathname)?.[1];
  };

  return {
    POST: guarded(async (request) => {
      // Stop carries no body, so it is told apart by its path before the chat turn's JSON.
      const stopping = actionSegment(request, 'stop');
      if (stopping !== undefined) return forward(request, chatActionPath(stopping, 'stop'), { method: 'POST' });
      const contentType = request.headers.get('Content-Type') ?? '';
      if (/^multipart\/form-data/i.test(contentType)) {
        const length = Number(request.headers.get('Content-Length') ?? '0');
        if (length > MAX_UPLOAD_BYTES) throw new ServiceError('FILE_TOO_LARGE', 'The file exceeds the 10 MiB limit.');
        return forward(request, '/v1/uploads', { method: 'POST', body: request.body ?? '', contentType });
      }
      const length = Number(request.headers.get('Content-Length') ?? '0');
      if (length > MAX_CHAT_REQUEST_BYTES) throw new ServiceError('PAYLOAD_TOO_LARGE', 'The request exceeds 1 MiB.');
      return forward(request, '/v1/chat', {
        method: 'POST',
        body: request.body ?? '',
        contentType: 'application/json',
        headers: {
          [STREAM_TIMEOUT_HEADER]: String(timeoutMs),
          ...(request.headers.get(RESUMABLE_HEADER) === '1' ? { [RESUMABLE_HEADER]: '1' } : {}),
        },
      });
    }),
    GET: guarded(async (request) => {
      if (new URL(request.url).searchParams.has('bootstrap'))
        return forward(request, '/v1/bootstrap', { method: 'GET' });
      // useChat's resume asks `${api}/${chatId}/stream`; the API's stream or 204 passes through.
      const resumable = actionSegment(request, 'stream');
      if (resumable !== undefined) return forward(request, chatActionPath(resumable, 'stream'), { method: 'GET' });
      return forward(request, chatPath(request), { method: 'GET' });
    }),
    DELETE: guarded(async (request) => forward(request, chatPath(request), { method: 'DELETE' })),
    OPTIONS: async () => new Response(null, { status: 204, headers: { Allow: 'GET, POST, DELETE, OPTIONS' } }),
  };
}

/**
 * The API path of `action` (useChat's resume, or stop) on the chat whose (encoded) path segment
 * is `segment`; an empty, `.` or `..` id is a 400.
 */
function chatActionPath(segment: string, action: ChatAction): string {
  let chatId: string;
  try {
    chatId = decodeURIComponent(segment);
  } catch {
    chatId = '';
  }
  if (chatId === '' || chatId === '.' || chatId === '..') {
    throw new ServiceError('VALIDATION_FAILED', `The chat id in the ${action} path is not valid.`);
  }
  return `/v1/chat/${encodeURIComponent(chatId)}/${action}`;
}

/** The answer deadline to use and hand to the API: the option within the API's range, or the default. */
function streamDeadline(streamTimeoutMs: number | undefined): number {
  const chosen = positiveOr(streamTimeoutMs, DEFAULT_STREAM_TIMEOUT_MS);
  return Math.min(Math.max(Math.ceil(chosen), MIN_STREAM_TIMEOUT_MS), MAX_STREAM_TIMEOUT_MS);
}
