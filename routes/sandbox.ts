import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import {
  type CallToolResult,
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { Context } from 'hono';
import { getEffectiveConfig } from '../src/agents/agent-configs.js';
import { readBearerToken } from '../src/auth/authenticate.js';
import { requirePermission } from '../src/auth/permissions.js';
import { sandboxMcpResource } from '../src/auth/sandbox-mcp-credentials.js';
import { SANDBOX_TOOL_NAMES } from '../src/config.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth, sandboxMcpAuth } from '../src/http/auth-middleware.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, problemResponses, UserHeaderSchema } from '../src/http/openapi.js';
import { readBodyWithLimit } from '../src/http/request-body.js';
import { boundedToolResult } from '../src/mcp/bounded-tool-result.js';
import { isEchoableId, MAX_JSON_RPC_ID_BYTES, toolResultBudget } from '../src/mcp/response-bounds.js';
import { createSandboxMcpServer, type ToolCallParameters } from '../src/mcp/sandbox-mcp-server.js';
import { effectivePolicy } from '../src/sandbox/egress/effective-policy.js';
import { evaluateSandboxGate, sandboxGateDependencies } from '../src/sandbox/gate.js';
import { createToolOutputFilter } from '../src/sandbox/output-filter.js';
import {
  type Admission,
  type CheckedCall,
  checkToolCall,
  type Refusal,
  reserveWorkspaceSlot,
  runAdmittedCall,
} from '../src/sandbox/tool-calls.js';
import { NO_NETWORK, sandboxToolDefinitions } from '../src/sandbox/tools/definitions.js';
import { readUserWorkspaceUsage } from '../src/sandbox/tools/workspace-usage.js';

/** Methods of the MCP endpoint a stateless server refuses with 405 (there is no stream or session). */
const STATELESS_REFUSED_METHODS = ['get', 'delete', 'put', 'patch'] as const;

/** Every MCP request body, chunked or not, is at most 1 MiB. */
const MCP_BODY_LIMIT = 1024 * 1024;

/** The headers a 2026-07-28 request repeats from its body (absent in the legacy era). */
const MODERN_ERA_HEADERS = {
  'mcp-protocol-version': z
    .string()
    .optional()
    .openapi({ description: 'The revision of a 2026-07-28 request, as in its `_meta` (e.g. `2026-07-28`).' }),
  'mcp-method': z.string().optional().openapi({ description: 'The JSON-RPC method of a 2026-07-28 request.' }),
  'mcp-name': z.string().optional().openapi({ description: 'The tool name of a 2026-07-28 `tools/call`.' }),
};

const StatusSchema = z.object({ enabled: z.boolean(), available: z.boolean() }).strict().openapi('SandboxStatus');

const UsageSchema = z
  .object({
    workspace: z
      .object({
        lastUsedAt: z.string().openapi({ description: 'ISO time of the last tool call in the workspace.' }),
        bytesUsed: z.number().int().nullable().openapi({ description: 'Bytes its files take.' }),
        quotaBytes: z.number().int().openapi({ description: 'The byte quota (`MORDN_SANDBOX_WORKSPACE_MAX_BYTES`).' }),
        fileCount: z.number().int().nullable().openapi({ description: 'Files, directories and links it holds.' }),
        fileQuota: z
          .number()
          .int()
          .nullable()
          .openapi({ description: 'The most files it can hold; null where no file limit is enforced.' }),
        deleteAfter: z.string().nullable().openapi({
          description:
            'ISO time (last use + `MORDN_SANDBOX_RETENTION_DAYS`) after which it is deleted unless used again; null when retention is off.',
        }),
      })
      .strict()
      .nullable()
      .openapi({ description: 'Null when the user has no workspace yet.' }),
  })
  .strict()
  .openapi('SandboxUsage');

function jsonRpcError(status: number, code: number, message: string, id: unknown = null): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

/**
 * `GET /v1/sandbox/status`, `GET /v1/sandbox/usage` and `POST /v1/sandbox/mcp`. All refuse `anon:`
 * users. The MCP endpoint is stateless: every request gets a fresh server and transport closed
 * over the caller's scope.
 */
export function registerSandboxRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;

  const statusRoute = createRoute({
    method: 'get',
    path: '/v1/sandbox/status',
    tags: ['Sandbox'],
    summary: 'Whether managed sandboxes are enabled (published config) and available (operator and backend).',
    description: 'Exactly two booleans. No side effects: nothing is provisioned, probed or created.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'read', { rejectAnonymous: true })] as const,
    request: { headers: UserHeaderSchema },
    responses: {
      200: { description: 'Status.', content: { 'application/json': { schema: StatusSchema } } },
      ...AGENT_AUTH_RESPONSES,
    },
  });
  app.openapi(statusRoute, async (c) => {
    const principal = c.get('principal');
    const publishedConfig = await getEffectiveConfig(db, principal.agentId);
    const status = await evaluateSandboxGate(sandboxGateDependencies(deps), {
      publishedConfig,
      tenantId: principal.tenantId,
      userId: principal.userId,
    });
    // Callers see two booleans; the operator's log says which leg of the gate kept it closed.
    if (status.closedBy)
      deps.logger.info({ requestId: c.get('requestId'), gate: status.closedBy }, 'sandbox gate closed');
    c.header('Cache-Control', 'private, no-store');
    return c.json({ enabled: status.enabled, available: status.available }, 200);
  });

  const usageRoute = createRoute({
    method: 'get',
    path: '/v1/sandbox/usage',
    tags: ['Sandbox'],
    summary: "The caller's workspace usage: bytes and files against the quota, and when retention deletes it.",
    description:
      'The same figures `sandbox_list_files` gives the model, plus the last use. `{"workspace":null}` when the user has no workspace yet; nothing is ever provisioned or recorded as a use, so asking does not postpone deletion. Counts are null when the workspace could not be measured. 503 `MANAGED_SANDBOX_UNAVAILABLE` when the user has a workspace but sandboxes are off on this service.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(db, 'read', { rejectAnonymous: true })] as const,
    request: { headers: UserHeaderSchema },
    responses: {
      200: { description: 'Usage.', content: { 'application/json': { schema: UsageSchema } } },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(503),
    },
  });
  app.openapi(usageRoute, async (c) => {
    const principal = c.get('principal');
    const answer = await readUserWorkspaceUsage(
      db,
      deps.sandbox?.backend,
      { tenantId: principal.tenantId, agentId: principal.agentId, userId: principal.userId },
      {
        limits: deps.config.sandbox,
        onError: (error) =>
          deps.logger.warn({ requestId: c.get('requestId'), err: error }, 'workspace usage not measured'),
      },
    );
    if (!answer) throw new ServiceError('MANAGED_SANDBOX_UNAVAILABLE', 'Managed sandboxes are off on this service.');
    c.header('Cache-Control', 'private, no-store');
    return c.json(answer, 200);
  });

  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/sandbox/mcp',
    tags: ['Sandbox'],
    summary:
      'MCP Streamable HTTP endpoint (stateless, JSON responses) exposing the six sandbox tools, in both protocol eras.',
    description:
      'Serves the legacy handshake era (`initialize`, protocol 2025-11-25 and older) and the stateless 2026-07-28 revision on the same URL; the era is told from the body: a request whose `params._meta` carries `io.modelcontextprotocol/protocolVersion` is 2026-07-28 and must also send the `MCP-Protocol-Version`, `Mcp-Method` and (for `tools/call`) `Mcp-Name` headers, which must agree with the body (`-32020`, 400); an unserved revision is `-32022` (400) and an unknown method `-32601` (404). `initialize`, `server/discover` and `tools/list` need the read permission and are static; `tools/call` needs write, re-checks the whole gate and is the only request that provisions a workspace. JSON-RPC batches are refused. Authenticated by an agent key with `X-Chat-User`, or by a per-user sandbox token (`POST /v1/sandbox/tokens`) alone: its user, permissions and tools come from the token, and an `X-Chat-User` sent with it must name the same user. Every 401 carries `WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource"`.',
    security: [...AGENT_SECURITY, { sandboxToken: [] }],
    request: {
      headers: UserHeaderSchema.partial().extend(MODERN_ERA_HEADERS),
      body: { required: true, content: { 'application/json': { schema: z.object({}).passthrough() } } },
    },
    responses: {
      200: {
        description: 'A JSON-RPC response.',
        content: { 'application/json': { schema: z.object({}).passthrough() } },
      },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(413, 415, 429),
    },
  });

  const allowedOrigin = new URL(deps.config.publicUrl).origin;
  const mcpAuth = sandboxMcpAuth(db, sandboxMcpResource(deps.config.publicUrl));
  const modern = modernEraHandler(deps);

  for (const method of STATELESS_REFUSED_METHODS) {
    app.openAPIRegistry.registerPath({
      method,
      path: '/v1/sandbox/mcp',
      tags: ['Sandbox'],
      summary: `${method.toUpperCase()} is not served: the MCP endpoint is stateless (405, \`Allow: POST\`).`,
      description:
        method === 'get'
          ? 'A stateless Streamable HTTP server has no server-to-client event stream: an MCP client opening one (`Accept: text/event-stream`) gets 405 and carries on over POST. Answered before authentication; counted as a probe, not as a request.'
          : 'There is no session to end or change: 405 before authentication.',
      responses: {
        405: {
          ...problemResponses(405)[405],
          headers: { Allow: { schema: { type: 'string' }, description: '`POST`.' } },
        },
      },
    });
  }
  app.on(['GET', 'DELETE', 'PUT', 'PATCH'], '/v1/sandbox/mcp', (c) => {
    // MCP clients open a GET event stream after connecting, and take a 405 as "this server has
    // none": the answer a stateless server is expected to give, logged and counted as a probe.
    if (c.req.method === 'GET' && (c.req.header('Accept') ?? '').includes('text/event-stream')) {
      c.set('probe', true);
    }
    throw new ServiceError('METHOD_NOT_ALLOWED', 'This MCP endpoint is stateless: use POST.', {
      headers: { Allow: 'POST' },
    });
  });

  app.post('/v1/sandbox/mcp', mcpAuth, async (c) => {
    // DNS rebinding: a browser page on another origin must not reach the endpoint through a
    // user's network. Server-side clients send no Origin at all.
    const origin = c.req.header('Origin');
    if (origin !== undefined && origin !== allowedOrigin) {
      throw new ServiceError('FORBIDDEN_ORIGIN', `Requests from origin ${origin} are not allowed.`);
    }
    const mediaType = (c.req.header('Content-Type') ?? '').split(';')[0]?.trim().toLowerCase();
    if (mediaType !== 'application/json') {
      throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', 'MCP requests are application/json.');
    }
    const body = await readBodyWithLimit(c.req.raw, {
      maxBytes: MCP_BODY_LIMIT,
      idleTimeoutMs: deps.config.requestIdleTimeoutMs,
    });
    let message: unknown;
    try {
      message = JSON.parse(new TextDecoder().decode(body));
    } catch {
      return jsonRpcError(400, -32700, 'Parse error: the body is not valid JSON.');
    }
    if (Array.isArray(message)) return jsonRpcError(400, -32600, 'JSON-RPC batches are not supported.');
    if (typeof message !== 'object' || message === null) {
      return jsonRpcError(400, -32600, 'Invalid request: expected one JSON-RPC message.');
    }
    const request = message as McpMessage;
    if (!isEchoableId(request.id)) {
      return jsonRpcError(
        400,
        -32600,
        `Invalid request: the id may be at most ${MAX_JSON_RPC_ID_BYTES} bytes of JSON.`,
      );
    }
    return handleMcpMessage(c, deps, request, modern);
  });
}

type McpMessage = { id?: unknown; method?: unknown; params?: unknown };

/** Why `tools/call` parameters are malformed (the SDK would call it an internal error), if they are. */
function malformedToolCall(params: unknown): string | undefined {
  const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(params)) return 'Invalid params: tools/call needs params with a tool name.';
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return 'Invalid params: the tool name (params.name) must be a string.';
  if (args !== undefined && !isObject(args)) return 'Invalid params: params.arguments must be an object.';
  return undefined;
}

/** The server prepared for each request the modern handler is serving (its factory's only input). */
const serversByRequest = new WeakMap<Request, McpServer>();

/**
 * The SDK's handler for 2026-07-28 requests (per-request `_meta` envelope, `server/discover`, the
 * header rules and the revision's error codes). It owns nothing between requests: each one is
 * answered by the server prepared for it, and 2025-era requests never reach it.
 */
function modernEraHandler(deps: AppDependencies): McpHttpHandler {
  return createMcpHandler(
    ({ requestInfo }) => {
      const server = requestInfo && serversByRequest.get(requestInfo);
      if (!server) throw new Error('No sandbox MCP server was prepared for this request.');
      return server;
    },
    {
      legacy: 'reject',
      // The default 'auto' answers with one JSON body unless a handler emits a message before
      // its result, which none of ours does.
      maxRequestBodySize: MCP_BODY_LIMIT,
      onerror: (error) => deps.logger.debug({ err: error }, 'sandbox MCP request refused'),
    },
  );
}

/**
 * One request of either era, on one server built for it: a 2025-era request (the `initialize`
 * handshake and what follows it, no `_meta` envelope) over the stateless Streamable HTTP
 * transport, a 2026-07-28 one through the SDK's modern handler. The SDK classifies the era.
 */
async function serveMcpRequest(
  request: Request,
  message: McpMessage,
  server: McpServer,
  modern: McpHttpHandler,
): Promise<Response> {
  if (await isLegacyRequest(request, message)) {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody: message });
  }
  serversByRequest.set(request, server);
  return modern.fetch(request, { parsedBody: message });
}

async function handleMcpMessage(
  c: Context<AppEnv>,
  deps: AppDependencies,
  message: McpMessage,
  modern: McpHttpHandler,
): Promise<Response> {
  const principal = c.get('principal');
  const requestId = c.get('requestId');
  const callDeps = {
    db: deps.database.db,
    config: deps.config,
    sandbox: deps.sandbox,
    storage: deps.storage,
    logger: deps.logger,
  };
  // A token narrowed to some tools lists only those, and a call of any other is an unknown tool.
  const reachable = c.get('sandboxTools') ?? SANDBOX_TOOL_NAMES;
  let check: CheckedCall | Extract<Admission, { kind: 'refused' }> | undefined;
  if (message.method === 'tools/call') {
    requirePermission(principal, 'write');
    const malformed = malformedToolCall(message.params);
    if (malformed) return jsonRpcError(200, -32602, malformed, message.id);
    const params = message.params as { name: string; arguments?: unknown };
    const narrowed = reachable.length < SANDBOX_TOOL_NAMES.length;
    check =
      narrowed && !(reachable as readonly string[]).includes(params.name)
        ? {
            kind: 'refused',
            refusal: { code: 'UNKNOWN_TOOL', message: `There is no such tool; the tools are ${reachable.join(', ')}.` },
          }
        : await checkToolCall(callDeps, principal, params);
  }

  const agentKey = readBearerToken(c.req.header('Authorization'), 'INVALID_API_KEY') ?? '';
  const filter = createToolOutputFilter(agentKey, deps.config.secretValues, deps.config.sandbox);
  // Every result, whatever it holds, fits the response bound with its envelope and framing.
  const bound = { maxBytes: toolResultBudget(deps.config.sandbox.maxOutputBytes), filter };
  const failure = (error: Refusal) => boundedToolResult({ error }, { ...bound, isError: true });
  // A workspace busy with its maximum of calls is a 429 for the whole request, not a tool result.
  let busy: unknown;
  // The call was checked from this same message (name and arguments) before the SDK saw it; it
  // reaches this handler only once the SDK has accepted the request (era, envelope, headers), so a
  // refused request provisions nothing.
  const handle = async (_call: ToolCallParameters, mcpSignal: AbortSignal): Promise<CallToolResult> => {
    if (check?.kind === 'refused') return failure(check.refusal);
    if (check?.kind !== 'checked') {
      return failure({ code: 'INVALID_INPUT', message: 'The call could not be checked.' });
    }
    let admission: Extract<Admission, { kind: 'admitted' }>;
    try {
      admission = await reserveWorkspaceSlot(callDeps, principal, check);
    } catch (error) {
      busy = error;
      throw error;
    }
    const outcome = await runAdmittedCall(callDeps, admission, principal, {
      signal: AbortSignal.any([c.req.raw.signal, mcpSignal]),
      requestId,
    });
    return outcome.ok ? boundedToolResult(outcome.result as Record<string, unknown>, bound) : failure(outcome.error);
  };

  // Listing tells the model what the workspace's network reaches: the published policy, read
  // without provisioning anything. Other requests never show a description.
  const listing = message.method === 'tools/list' || message.method === 'server/discover';
  const network = listing
    ? effectivePolicy(
        deps.config.sandbox.egress,
        principal.tenantId,
        await getEffectiveConfig(deps.database.db, principal.agentId),
      )
    : NO_NETWORK;
  const definitions = sandboxToolDefinitions(deps.config.sandbox, network).filter((definition) =>
    reachable.includes(definition.name),
  );
  const server = createSandboxMcpServer(definitions, handle);
  try {
    const response = await serveMcpRequest(c.req.raw, message, server, modern);
    if (busy) throw busy;
    return response;
  } finally {
    await server.close().catch(() => undefined);
  }
}
