import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { CallToolResult, McpHttpHandler } from '@modelcontextprotocol/server';
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
import { ExecProgress, progressBudget, progressTokenOf } from '../src/mcp/exec-progress.js';
import { isEchoableId, MAX_JSON_RPC_ID_BYTES, toolResultBudget } from '../src/mcp/response-bounds.js';
import { createSandboxMcpServer, type ToolCallRequest } from '../src/mcp/sandbox-mcp-server.js';
import {
  createModernEraHandler,
  isEventStream,
  relayEventStream,
  serveMcpRequest,
} from '../src/mcp/serve-mcp-request.js';
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
import { principalAttributes } from '../src/telemetry/principal-attributes.js';
import { startMcpRequestTrace } from '../src/telemetry/sandbox-spans.js';

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
      'MCP Streamable HTTP endpoint (stateless; JSON responses, an event stream for live command output) exposing the six sandbox tools, in both protocol eras.',
    description:
      'Serves the legacy handshake era (`initialize`, protocol 2025-11-25 and older) and the stateless 2026-07-28 revision on the same URL; the era is told from the body: a request whose `params._meta` carries `io.modelcontextprotocol/protocolVersion` is 2026-07-28 and must also send the `MCP-Protocol-Version`, `Mcp-Method` and (for `tools/call`) `Mcp-Name` headers, which must agree with the body (`-32020`, 400); an unserved revision is `-32022` (400) and an unknown method `-32601` (404). `initialize`, `server/discover` and `tools/list` need the read permission and are static; `tools/call` needs write, re-checks the whole gate and is the only request that provisions a workspace. JSON-RPC batches are refused. Authenticated by an agent key with `X-Chat-User`, or by a per-user sandbox token (`POST /v1/sandbox/tokens`) alone: its user, permissions and tools come from the token, and an `X-Chat-User` sent with it must name the same user. Every 401 carries `WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource"`. Live output: a `sandbox_exec` call whose `params._meta.progressToken` is a string or number (its JSON at most 256 bytes, else `-32600`, 400), from a client whose `Accept` includes `text/event-stream`, is answered with an event stream: `notifications/progress` while the command runs (the token echoed, `progress` the output bytes so far, `message` the new output of one stream as text, `_meta["mordn/stream"]` `stdout` or `stderr`; at most 4 a second, new output within 500 ms, none while the command is silent, output redacted like the result), then the result. The whole body, notifications included, stays within the response bound; live output takes at most min(64 KiB, an eighth of it) and the result the rest. Every other request is answered as one JSON body.',
    security: [...AGENT_SECURITY, { sandboxToken: [] }],
    request: {
      headers: UserHeaderSchema.partial().extend(MODERN_ERA_HEADERS),
      body: { required: true, content: { 'application/json': { schema: z.object({}).passthrough() } } },
    },
    responses: {
      200: {
        description:
          'A JSON-RPC response; for a `sandbox_exec` call with a progress token, an event stream of `notifications/progress` messages and then the response, each as `event: message` with the JSON-RPC message in `data` (in the 2026-07-28 era only once a notification is sent: a command that writes nothing is answered as JSON).',
        content: {
          'application/json': { schema: z.object({}).passthrough() },
          'text/event-stream': { schema: z.string() },
        },
      },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(413, 415, 429),
    },
  });

  const allowedOrigin = new URL(deps.config.publicUrl).origin;
  const mcpAuth = sandboxMcpAuth(db, sandboxMcpResource(deps.config.publicUrl));
  const modern = createModernEraHandler({ logger: deps.logger, maxRequestBodySize: MCP_BODY_LIMIT });

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
    // Every progress notification echoes the token: it is bounded like the id.
    if (!isEchoableId(progressTokenOf(request.params))) {
      return jsonRpcError(
        400,
        -32600,
        `Invalid request: the progress token may be at most ${MAX_JSON_RPC_ID_BYTES} bytes of JSON.`,
        request.id,
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
    ...(deps.usage ? { usage: deps.usage } : {}),
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
  const budget = toolResultBudget(deps.config.sandbox.maxOutputBytes);
  const failure = (error: Refusal, maxBytes = budget) =>
    boundedToolResult({ error }, { maxBytes, filter, isError: true });
  // Live output: a sandbox_exec call with a progress token, from a client that reads event streams.
  const progressToken =
    check?.kind === 'checked' && check.tool === 'sandbox_exec' && acceptsEventStream(c)
      ? progressTokenOf(message.params)
      : undefined;
  // A workspace busy with its maximum of calls is a 429 for the whole request, not a tool result.
  let busy: unknown;
  // The call was checked from this same message (name and arguments) before the SDK saw it; it
  // reaches this handler only once the SDK has accepted the request (era, envelope, headers), so a
  // refused request provisions nothing.
  const handle = async (_call: unknown, request: ToolCallRequest): Promise<CallToolResult> => {
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
    const signal = AbortSignal.any([c.req.raw.signal, request.signal]);
    const progress =
      progressToken === undefined
        ? undefined
        : new ExecProgress({ progressToken, maxBytes: progressBudget(budget), filter, send: request.notify, signal });
    try {
      const outcome = await runAdmittedCall(callDeps, admission, principal, {
        signal,
        requestId,
        ...(progress ? { onOutput: progress.onOutput } : {}),
      });
      await progress?.finish();
      // Progress took its share of the response: the result gets the rest.
      const maxBytes = budget - (progress?.usedBytes ?? 0);
      return outcome.ok
        ? boundedToolResult(outcome.result as Record<string, unknown>, { maxBytes, filter })
        : failure(outcome.error, maxBytes);
    } finally {
      progress?.cancel();
    }
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
  const close = () => server.close().catch(() => undefined);
  let response: Response;
  const traced = startMcpRequestTrace(message, () => principalAttributes(principal, deps.userHash));
  try {
    response = await traced.within(() =>
      serveMcpRequest(c.req.raw, message, server, modern, { eventStream: progressToken !== undefined }),
    );
    // An event stream runs on after this: the server closes once it is over.
    if (isEventStream(response)) {
      response = await relayEventStream(response, () => {
        traced.end();
        void close();
      });
    } else {
      traced.end();
      await close();
    }
  } catch (error) {
    traced.end(error);
    await close();
    throw error;
  }
  if (busy) {
    await response.body?.cancel().catch(() => undefined);
    throw busy;
  }
  return response;
}

/** Whether the client takes event streams (live output comes as one). */
function acceptsEventStream(c: Context<AppEnv>): boolean {
  return (c.req.header('Accept') ?? '').includes('text/event-stream');
}
