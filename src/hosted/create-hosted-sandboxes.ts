import { createMCPClient } from '@ai-sdk/mcp';
import type { Tool, ToolSet } from 'ai';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { isSandboxEnabled } from '../agents/config-schema.js';
import { isAnonymousUserId, rejectAnonymousUser } from '../auth/user-id.js';
import { type ArtifactCarrier, mintArtifactCarrier, type PublishedFile } from '../chat/artifact-carrier.js';
import type { BuiltTools, ChatRequestContext, ManagedSandboxIntegration, SandboxAvailability } from '../chat/types.js';
import { ALL_UPLOAD_TYPES, MANAGED_UPLOAD_MAX_BYTES } from '../media-types.js';
import type { ExchangeTransport } from '../net/bounded-response.js';
import { createApiFetch } from './api-fetch.js';
import { resolveApiOrigin } from './api-origin.js';
import { withLiveOutput } from './live-exec-tool.js';
import { callToolWithProgress } from './mcp-progress-call.js';
import { mintRequestBody, requestSandboxToken } from './mint-sandbox-token.js';

export interface HostedOptions {
  /**
   * The agent API key. It is the only credential the helper holds. `''` sends none (a `transport`
   * that vouches for its caller; MCP then needs `mcpCredential: 'userToken'`).
   */
  apiKey: string;
  /** The public HTTPS origin of the Mordn API. */
  baseUrl?: string;
  /**
   * A literal loopback origin (`http://127.0.0.1[:port]` or `http://[::1][:port]`) for a trusted
   * runtime calling the API in the same place. Server configuration only — never from a request.
   */
  selfBaseUrl?: string;
  /**
   * Sent as `X-Request-Id` with every API request, so the API's log lines of these sandbox calls
   * (which gate leg was closed, say) carry the id of the request they serve.
   */
  requestId?: string;
  /** Logs why a publish produced no download, or why the status could not be read (never secrets). */
  onWarning?(message: string): void;
  /** A connection pool shared with other integrations (see `createApiDispatcher`); default a private one. */
  dispatcher?: Dispatcher;
  /**
   * What MCP calls carry. `'agentKey'` (default): the agent key and `X-Chat-User` on every call.
   * `'userToken'`: a per-user sandbox token, minted with the agent key on the user's first MCP
   * use (`POST /v1/sandbox/tokens`) and reused until shortly before it expires, so the MCP
   * connection never carries the agent key. Status and download links keep using the agent key.
   */
  mcpCredential?: 'agentKey' | 'userToken';
  /** Lifetime of the tokens `mcpCredential: 'userToken'` mints; default the API's (15 minutes). */
  userTokenTtlSeconds?: number;
  /**
   * Carries the API's requests in process instead of over the network (the service's own
   * `app.fetch`); the origin, path, redirect and size rules still apply.
   */
  transport?: ExchangeTransport;
}

/** A cached token is replaced once less than this is left of it, so no call starts on a dying token. */
const TOKEN_RENEWAL_MARGIN_MS = 60_000;

const API_PATHS = [
  /^\/v1\/sandbox\/status$/,
  /^\/v1\/sandbox\/usage$/,
  /^\/v1\/sandbox\/mcp$/,
  /^\/v1\/sandbox\/tokens$/,
  /^\/v1\/uploads\/resign$/,
];
const PUBLISH_TOOL = 'sandbox_publish_file';
const EXEC_TOOL = 'sandbox_exec';

/** What a live publish result must look like before the signer is even asked. */
const PublishResult = z.object({
  file: z.object({
    type: z.literal('file'),
    url: z.string().min(1),
    storagePath: z.string().regex(/^artifacts\/[0-9a-f]{32}$/),
    filename: z.string().min(1).max(255),
    mediaType: z.enum(ALL_UPLOAD_TYPES as [string, ...string[]]),
    size: z.number().int().min(0).max(MANAGED_UPLOAD_MAX_BYTES),
  }),
});
/** A fresh download link: absolute http(s), nothing a browser would run or resolve elsewhere. */
const DownloadUrl = z
  .string()
  .min(1)
  .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), 'is not an http(s) URL');
/**
 * The signer's answer: `{ url }`, or `{ url, file }` with the registry's canonical record. Both
 * are accepted; a richer record, when present, must describe the very file asked for.
 */
const SignerAnswer = z.object({
  url: DownloadUrl,
  file: PublishResult.shape.file.omit({ url: true }).extend({ url: DownloadUrl }).optional(),
});
const StatusAnswer = z.object({ enabled: z.boolean(), available: z.boolean() });
/** `GET /v1/sandbox/usage`: only whether there is a workspace matters here. */
const UsageAnswer = z.object({ workspace: z.object({}).passthrough().nullable() });

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : 'unknown error';
}

/**
 * The value of a sandbox tool's result: its `structuredContent`, or, for a result too large to
 * carry both (long or binary output), the JSON text of its first content part, which then has
 * `truncated: true` if it was cut. Undefined for an error result or anything else.
 *
 * @example
 * const value = toolResultValue(await tools.sandbox_list_files.execute({ path: '.' }, options));
 * // → { entries: [{ name: 'report.csv', … }], truncated: false, usage: { bytesUsed: …, … } }
 */
export function toolResultValue(result: unknown): unknown {
  if (typeof result !== 'object' || result === null) return undefined;
  const record = result as { isError?: unknown; structuredContent?: unknown; content?: unknown };
  if (record.isError === true) return undefined;
  if (record.structuredContent !== undefined) return record.structuredContent;
  const first = (Array.isArray(record.content) ? record.content[0] : undefined) as
    | { type?: unknown; text?: unknown }
    | undefined;
  if (first?.type !== 'text' || typeof first.text !== 'string') return undefined;
  try {
    return JSON.parse(first.text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The managed-sandbox integration for a host's chat handler: status from `GET /v1/sandbox/status`
 * and the six curated tools over MCP from `/v1/sandbox/mcp`, holding only the agent key and the
 * verified user. Lazy — an agent whose config does not enable sandboxes causes no request at all —
 * and it refuses `anon:` users itself. Its HTTP stays on the API's origin and routes, follows no
 * redirect, and is bounded to 1 MiB and 120 s per request. Tool calls are never retried.
 *
 * Only the live result of `sandbox_publish_file` can produce a download: its shape is checked,
 * the API's signer resolves its storage path for this user, and the signer's canonical record
 * becomes the carrier passed to `onArtifact`.
 *
 * `sandbox_exec` shows its command's output while it runs: its `execute` is an async iterable
 * whose values are preliminary results (`{ output: [{ stream, text }], omittedBytes }`, the
 * latest output within 8 KiB), from the API's progress notifications, and whose last value is
 * the tool's result, as `@ai-sdk/mcp` returns it (see `withLiveOutput`).
 *
 * With `mcpCredential: 'userToken'` the MCP connection carries a per-user sandbox token instead
 * of the agent key (minted lazily, cached per user until a minute before it expires).
 *
 * @example
 * const sandboxes = createHostedSandboxes({ apiKey: process.env.MORDN_CHAT_KEY!, baseUrl: 'https://api.example.com' });
 */
export function createHostedSandboxes(options: HostedOptions): ManagedSandboxIntegration {
  const origin = resolveApiOrigin({
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
    ...(options.selfBaseUrl === undefined ? {} : { selfBaseUrl: options.selfBaseUrl }),
  });
  const apiFetch = createApiFetch({
    origin,
    allowedPaths: API_PATHS,
    ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
    ...(options.transport === undefined ? {} : { transport: options.transport }),
  });
  const headersFor = (context: ChatRequestContext) => ({
    ...(options.apiKey === '' ? {} : { Authorization: `Bearer ${options.apiKey}` }),
    'X-Chat-User': context.userId,
    ...(options.requestId === undefined ? {} : { 'X-Request-Id': options.requestId }),
  });
  const boundFetch =
    (signal: AbortSignal): typeof fetch =>
    (input, init) =>
      apiFetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });

  // Per-user tokens (`mcpCredential: 'userToken'`), each reused until close to its expiry.
  const userTokens = new Map<string, { token: string; renewAt: number }>();
  const mcpHeadersFor = async (context: ChatRequestContext, signal: AbortSignal): Promise<Record<string, string>> => {
    if (options.mcpCredential !== 'userToken') return headersFor(context);
    let cached = userTokens.get(context.userId);
    if (!cached || cached.renewAt <= Date.now()) {
      // Tokens past renewal are never used again: dropping them keeps the cache to live users.
      for (const [userId, entry] of userTokens) if (entry.renewAt <= Date.now()) userTokens.delete(userId);
      const minted = await requestSandboxToken(
        boundFetch(signal),
        origin,
        headersFor(context),
        mintRequestBody(options.userTokenTtlSeconds === undefined ? {} : { ttlSeconds: options.userTokenTtlSeconds }),
      );
      cached = { token: minted.token, renewAt: Date.parse(minted.expiresAt) - TOKEN_RENEWAL_MARGIN_MS };
      userTokens.set(context.userId, cached);
    }
    return {
      Authorization: `Bearer ${cached.token}`,
      ...(options.requestId === undefined ? {} : { 'X-Request-Id': options.requestId }),
    };
  };

  /**
   * Resolves a live publish result through the API's signer, for this user. The signer's own
   * record wins when it sends one; a signer answering `{ url }` alone vouches for the file the
   * trusted publish result described. Anything else (an error status, a malformed answer, a
   * record of another file) throws: no download.
   */
  const resign = async (
    context: ChatRequestContext,
    published: PublishedFile,
    signal: AbortSignal,
  ): Promise<PublishedFile> => {
    const response = await boundFetch(signal)(`${origin}/v1/uploads/resign`, {
      method: 'POST',
      headers: { ...headersFor(context), 'Content-Type': 'application/json' },
      body: JSON.stringify({ storagePath: published.storagePath }),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new Error(`the signer answered ${response.status}`);
    }
    const answer = SignerAnswer.safeParse(await response.json().catch(() => undefined));
    if (!answer.success) throw new Error('the signer answered something other than a download link');
    const record = answer.data.file ?? published;
    if (record.storagePath !== published.storagePath) throw new Error('the signer described another file');
    const { storagePath, filename, mediaType, size } = record;
    return { storagePath, filename, mediaType, size, url: answer.data.url };
  };

  const withArtifacts = (
    tool: Tool,
    context: ChatRequestContext,
    signal: AbortSignal,
    onArtifact: (carrier: ArtifactCarrier) => void,
  ): Tool => {
    const execute = tool.execute;
    if (!execute) return tool;
    return {
      ...tool,
      execute: async (input, callOptions) => {
        const result = await execute(input, callOptions);
        const parsed = PublishResult.safeParse(toolResultValue(result));
        if (!parsed.success) return result;
        try {
          // Values for the download come from the signer's record, not from the tool result.
          const file = await resign(context, parsed.data.file, signal);
          onArtifact(mintArtifactCarrier(callOptions.toolCallId, file));
        } catch (error) {
          options.onWarning?.(`A published file produced no download: ${messageOf(error)}.`);
        }
        return result;
      },
    };
  };

  return {
    kind: 'mordn-managed',

    async status(context): Promise<SandboxAvailability> {
      const enabled = isSandboxEnabled(context.config);
      if (!enabled || isAnonymousUserId(context.userId)) return { enabled, available: false };
      const signal = context.abortSignal ?? new AbortController().signal;
      // An outage of the status route (no answer, an error status, a body of another shape) means
      // "unavailable now", never a failed request: the caller answers with its safe copy.
      const unavailable = (why: string): SandboxAvailability => {
        options.onWarning?.(`The managed sandbox status could not be read: ${why}.`);
        return { enabled, available: false };
      };
      try {
        const response = await boundFetch(signal)(`${origin}/v1/sandbox/status`, { headers: headersFor(context) });
        if (!response.ok) {
          await response.body?.cancel().catch(() => undefined);
          return unavailable(`the API answered ${response.status}`);
        }
        const status = StatusAnswer.safeParse(await response.json().catch(() => undefined));
        if (!status.success) return unavailable('the API answered something other than a status');
        return { enabled: status.data.enabled, available: status.data.enabled && status.data.available };
      } catch (error) {
        // A request given up (client gone, deadline passed) is reported as such by the caller.
        if (signal.aborted) throw error;
        return unavailable(messageOf(error));
      }
    },

    async hasWorkspace(context): Promise<boolean> {
      if (isAnonymousUserId(context.userId)) return false;
      const signal = context.abortSignal ?? new AbortController().signal;
      // The usage route provisions nothing; any answer but a workspace's figures means none to use.
      try {
        const response = await boundFetch(signal)(`${origin}/v1/sandbox/usage`, { headers: headersFor(context) });
        if (!response.ok) {
          await response.body?.cancel().catch(() => undefined);
          options.onWarning?.(`The workspace could not be looked up: the API answered ${response.status}.`);
          return false;
        }
        const usage = UsageAnswer.safeParse(await response.json().catch(() => undefined));
        return usage.success && usage.data.workspace !== null;
      } catch (error) {
        if (signal.aborted) throw error;
        options.onWarning?.(`The workspace could not be looked up: ${messageOf(error)}.`);
        return false;
      }
    },

    async buildTools(context, { abortSignal, onArtifact }): Promise<BuiltTools> {
      // 403 ANONYMOUS_USER, as the API itself answers, for `anon:` in any letter case.
      rejectAnonymousUser(context.userId);
      const headers = await mcpHeadersFor(context, abortSignal);
      const url = `${origin}/v1/sandbox/mcp`;
      const fetchApi = boundFetch(abortSignal);
      // The revision the client negotiated, as its requests after the handshake carry it.
      let protocolVersion: string | undefined;
      const client = await createMCPClient({
        transport: {
          type: 'http',
          url,
          headers,
          redirect: 'error',
          fetch: (input, init) => {
            protocolVersion = new Headers(init?.headers).get('mcp-protocol-version') ?? protocolVersion;
            return fetchApi(input, init);
          },
        },
        maxRetries: 0,
      }).catch((error: unknown) => {
        // A token refused (revoked, say) is minted afresh for the next request, not reused.
        userTokens.delete(context.userId);
        throw error;
      });
      let closed = false;
      const close = async () => {
        if (closed) return;
        closed = true;
        await client.close();
      };
      try {
        const discovered = await client.tools();
        const tools: ToolSet = {};
        for (const [name, tool] of Object.entries(discovered)) {
          tools[name] = name === PUBLISH_TOOL ? withArtifacts(tool as Tool, context, abortSignal, onArtifact) : tool;
        }
        // Commands report their output as they run: a call of its own asks for progress.
        const exec = tools[EXEC_TOOL];
        if (exec) {
          tools[EXEC_TOOL] = withLiveOutput(exec, (input, signal, onOutput) =>
            callToolWithProgress({
              fetch: fetchApi,
              url,
              headers,
              ...(protocolVersion === undefined ? {} : { protocolVersion }),
              name: EXEC_TOOL,
              args: input,
              signal,
              onOutput,
            }),
          );
        }
        return { tools, close };
      } catch (error) {
        await close();
        throw error;
      }
    },
  };
}
