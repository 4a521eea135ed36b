import { createMCPClient } from '@ai-sdk/mcp';
import type { Tool, ToolSet } from 'ai';
import { z } from 'zod';
import { isSandboxEnabled } from '../agents/config-schema.js';
import { isAnonymousUserId } from '../auth/user-id.js';
import { type ArtifactCarrier, mintArtifactCarrier, type PublishedFile } from '../chat/artifact-carrier.js';
import type { BuiltTools, ChatRequestContext, ManagedSandboxIntegration, SandboxAvailability } from '../chat/types.js';
import { ALL_UPLOAD_TYPES, MANAGED_UPLOAD_MAX_BYTES } from '../uploads/media-types.js';
import { createApiFetch } from './api-fetch.js';
import { resolveApiOrigin } from './api-origin.js';

export interface HostedOptions {
  /** The agent API key. It is the only credential the helper holds. */
  apiKey: string;
  /** The public HTTPS origin of the Mordn API. */
  baseUrl?: string;
  /**
   * A literal loopback origin (`http://127.0.0.1[:port]` or `http://[::1][:port]`) for a trusted
   * runtime calling the API in the same place. Server configuration only — never from a request.
   */
  selfBaseUrl?: string;
  /** Logs why a publish produced no download (never secrets). */
  onWarning?(message: string): void;
}

const API_PATHS = [/^\/v1\/sandbox\/status$/, /^\/v1\/sandbox\/mcp$/, /^\/v1\/uploads\/resign$/];
const PUBLISH_TOOL = 'sandbox_publish_file';

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
const SignerAnswer = z.object({
  url: z.string().min(1),
  file: PublishResult.shape.file.omit({ url: true }).extend({ url: z.string().min(1) }),
});

function structuredContentOf(result: unknown): unknown {
  if (typeof result !== 'object' || result === null) return undefined;
  const record = result as { isError?: unknown; structuredContent?: unknown };
  return record.isError === true ? undefined : record.structuredContent;
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
 * @example
 * const sandboxes = createHostedSandboxes({ apiKey: process.env.MORDN_CHAT_KEY!, baseUrl: 'https://api.example.com' });
 */
export function createHostedSandboxes(options: HostedOptions): ManagedSandboxIntegration {
  const origin = resolveApiOrigin({
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
    ...(options.selfBaseUrl === undefined ? {} : { selfBaseUrl: options.selfBaseUrl }),
  });
  const apiFetch = createApiFetch({ origin, allowedPaths: API_PATHS });
  const headersFor = (context: ChatRequestContext) => ({
    Authorization: `Bearer ${options.apiKey}`,
    'X-Chat-User': context.userId,
  });
  const boundFetch =
    (signal: AbortSignal): typeof fetch =>
    (input, init) =>
      apiFetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });

  const resign = async (
    context: ChatRequestContext,
    storagePath: string,
    signal: AbortSignal,
  ): Promise<PublishedFile> => {
    const response = await boundFetch(signal)(`${origin}/v1/uploads/resign`, {
      method: 'POST',
      headers: { ...headersFor(context), 'Content-Type': 'application/json' },
      body: JSON.stringify({ storagePath }),
    });
    if (!response.ok) throw new Error(`the signer answered ${response.status}`);
    const answer = SignerAnswer.parse(await response.json());
    if (answer.file.storagePath !== storagePath) throw new Error('the signer described another file');
    return { ...answer.file, url: answer.url };
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
        const parsed = PublishResult.safeParse(structuredContentOf(result));
        if (!parsed.success) return result;
        try {
          // Values for the download come from the signer's record, not from the tool result.
          const file = await resign(context, parsed.data.file.storagePath, signal);
          onArtifact(mintArtifactCarrier(callOptions.toolCallId, file));
        } catch (error) {
          options.onWarning?.(
            `A published file produced no download: ${error instanceof Error ? error.message : 'unknown error'}.`,
          );
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
      const response = await boundFetch(context.abortSignal ?? new AbortController().signal)(
        `${origin}/v1/sandbox/status`,
        { headers: headersFor(context) },
      );
      if (!response.ok) return { enabled, available: false };
      const status = z.object({ enabled: z.boolean(), available: z.boolean() }).parse(await response.json());
      return { enabled: status.enabled, available: status.enabled && status.available };
    },

    async buildTools(context, { abortSignal, onArtifact }): Promise<BuiltTools> {
      if (isAnonymousUserId(context.userId)) {
        throw new Error('Managed sandboxes require a verified, signed-in user.');
      }
      const client = await createMCPClient({
        transport: {
          type: 'http',
          url: `${origin}/v1/sandbox/mcp`,
          headers: headersFor(context),
          redirect: 'error',
          fetch: boundFetch(abortSignal),
        },
        maxRetries: 0,
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
        return { tools, close };
      } catch (error) {
        await close();
        throw error;
      }
    },
  };
}
