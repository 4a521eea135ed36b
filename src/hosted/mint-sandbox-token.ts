import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { SANDBOX_TOOL_NAMES, type SandboxToolName } from '../sandbox-tool-names.js';
import { createApiFetch } from './api-fetch.js';
import { resolveApiOrigin } from './api-origin.js';

export interface MintSandboxTokenOptions {
  /** The agent API key (with the write permission). It never leaves this call. */
  apiKey: string;
  /** The public HTTPS origin of the Mordn API. */
  baseUrl?: string;
  /** A literal loopback origin for a trusted runtime beside the API (see `HostedOptions`). */
  selfBaseUrl?: string;
  /** The verified, signed-in user whose workspace the token reaches (never `anon:`). */
  userId: string;
  /** Lifetime in seconds (60 to the operator's `MORDN_SANDBOX_TOKEN_MAX_SECONDS`); default 900. */
  ttlSeconds?: number;
  /** A non-empty subset of the six sandbox tools; default all. */
  tools?: readonly SandboxToolName[];
  /** `['read']` for discovery only; default `['read', 'write']`. */
  permissions?: readonly ('read' | 'write')[];
  requestId?: string;
  dispatcher?: Dispatcher;
}

export interface MintedSandboxToken {
  id: string;
  /** The bearer token for `mcpUrl`: hand it to the MCP client, never log it. */
  token: string;
  expiresAt: string;
  permissions: Array<'read' | 'write'>;
  tools: SandboxToolName[];
  /** The one URL the token is valid on: `<origin>/v1/sandbox/mcp`. */
  mcpUrl: string;
}

const MintAnswer = z.object({
  id: z.string().regex(/^tok_[0-9a-f]+$/),
  token: z.string().regex(/^mordn_mcp_[A-Za-z0-9_-]{43}$/),
  expiresAt: z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'is not a date'),
  permissions: z.array(z.enum(['read', 'write'])),
  tools: z.array(z.enum(SANDBOX_TOOL_NAMES)),
});

/** Why a token could not be minted: the API's status and problem code (no secret). */
export class SandboxTokenError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  constructor(status: number, code: string | undefined, detail: string | undefined) {
    super(
      `The Mordn API refused to mint a sandbox token (${status}${code ? ` ${code}` : ''})${detail ? `: ${detail}` : ''}.`,
    );
    this.name = 'SandboxTokenError';
    this.status = status;
    this.code = code;
  }
}

/** The body of `POST /v1/sandbox/tokens` for these options (absent fields keep the API's defaults). */
export function mintRequestBody(options: Pick<MintSandboxTokenOptions, 'ttlSeconds' | 'tools' | 'permissions'>) {
  return {
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
    ...(options.tools === undefined ? {} : { tools: [...options.tools] }),
    ...(options.permissions === undefined ? {} : { permissions: [...options.permissions] }),
  };
}

/**
 * Posts a mint request through an origin-bound API fetch and checks the answer's shape; throws a
 * `SandboxTokenError` naming the API's status and code when it refuses.
 */
export async function requestSandboxToken(
  apiFetch: typeof fetch,
  origin: string,
  headers: Record<string, string>,
  body: ReturnType<typeof mintRequestBody>,
): Promise<MintedSandboxToken> {
  const response = await apiFetch(`${origin}/v1/sandbox/tokens`, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer: unknown = await response.json().catch(() => undefined);
  if (response.status !== 201) {
    const problem = (answer ?? {}) as { code?: unknown; detail?: unknown };
    throw new SandboxTokenError(
      response.status,
      typeof problem.code === 'string' ? problem.code : undefined,
      typeof problem.detail === 'string' ? problem.detail : undefined,
    );
  }
  const parsed = MintAnswer.safeParse(answer);
  if (!parsed.success) throw new SandboxTokenError(response.status, undefined, 'the answer is not a sandbox token');
  return { ...parsed.data, mcpUrl: `${origin}/v1/sandbox/mcp` };
}

/**
 * Mints a per-user token for `/v1/sandbox/mcp`, for a host that hands one user's workspace to an
 * MCP client it does not run itself (a third-party agent runtime): the client gets the token and
 * the URL, never the agent key, and reaches only that user's workspace, only through that
 * endpoint, until the token expires or is revoked (`DELETE /v1/sandbox/tokens[/:id]`).
 *
 * @example
 * const { token, mcpUrl } = await mintSandboxToken({
 *   apiKey: process.env.MORDN_CHAT_KEY!, baseUrl: 'https://api.example.com', userId: 'user-123',
 *   ttlSeconds: 600, tools: ['sandbox_exec', 'sandbox_read_file'],
 * });
 * // tools: [{ type: 'mcp', server_label: 'workspace', server_url: mcpUrl, headers: { Authorization: `Bearer ${token}` } }]
 */
export async function mintSandboxToken(options: MintSandboxTokenOptions): Promise<MintedSandboxToken> {
  const origin = resolveApiOrigin({
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
    ...(options.selfBaseUrl === undefined ? {} : { selfBaseUrl: options.selfBaseUrl }),
  });
  const apiFetch = createApiFetch({
    origin,
    allowedPaths: [/^\/v1\/sandbox\/tokens$/],
    ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
  });
  return requestSandboxToken(
    apiFetch,
    origin,
    {
      Authorization: `Bearer ${options.apiKey}`,
      'X-Chat-User': options.userId,
      ...(options.requestId === undefined ? {} : { 'X-Request-Id': options.requestId }),
    },
    mintRequestBody(options),
  );
}
