import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Context } from 'hono';
import { getEffectiveConfig } from '../src/agents/agent-configs.js';
import { readBearerToken } from '../src/auth/authenticate.js';
import { requirePermission } from '../src/auth/permissions.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { readBodyWithLimit } from '../src/http/json-body.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, problemResponses, UserHeaderSchema } from '../src/http/openapi.js';
import { createSandboxMcpServer, toolResult } from '../src/mcp/sandbox-mcp-server.js';
import { evaluateSandboxGate, sandboxGateDependencies } from '../src/sandbox/gate.js';
import { createToolOutputFilter } from '../src/sandbox/output-filter.js';
import { type Admission, admitToolCall, runAdmittedCall } from '../src/sandbox/tool-calls.js';
import { sandboxToolDefinitions } from '../src/sandbox/tools/definitions.js';
import { releaseWorkspaceLease } from '../src/sandbox/workspaces.js';

/** Every MCP request body, chunked or not, is at most 1 MiB. */
const MCP_BODY_LIMIT = 1024 * 1024;

const StatusSchema = z.object({ enabled: z.boolean(), available: z.boolean() }).strict().openapi('SandboxStatus');

function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

/**
 * `GET /v1/sandbox/status` and `POST /v1/sandbox/mcp`. Both refuse `anon:` users. The MCP endpoint
 * is stateless: every request gets a fresh server and transport closed over the caller's scope.
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
    c.header('Cache-Control', 'private, no-store');
    return c.json({ enabled: status.enabled, available: status.available }, 200);
  });

  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/sandbox/mcp',
    tags: ['Sandbox'],
    summary: 'MCP Streamable HTTP endpoint (stateless, JSON responses) exposing the six sandbox tools.',
    description:
      '`initialize` and `tools/list` need the read permission and are static; `tools/call` needs write, re-checks the whole gate and is the only request that provisions a workspace. JSON-RPC batches are refused.',
    security: AGENT_SECURITY,
    request: {
      headers: UserHeaderSchema,
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
  const mcpAuth = agentAuth(db, 'read', { rejectAnonymous: true });

  app.on(['GET', 'DELETE', 'PUT', 'PATCH'], '/v1/sandbox/mcp', () => {
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
    const body = await readBodyWithLimit(c.req.raw, MCP_BODY_LIMIT);
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
    return handleMcpMessage(c, deps, message as { method?: unknown; params?: unknown });
  });
}

async function handleMcpMessage(
  c: Context<AppEnv>,
  deps: AppDependencies,
  message: { method?: unknown; params?: unknown },
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
  let admission: Admission | undefined;
  if (message.method === 'tools/call') {
    requirePermission(principal, 'write');
    const params = typeof message.params === 'object' && message.params !== null ? message.params : {};
    admission = await admitToolCall(callDeps, principal, params as { name?: unknown; arguments?: unknown });
  }

  const agentKey = readBearerToken(c.req.header('Authorization'), 'INVALID_API_KEY') ?? '';
  const filter = createToolOutputFilter(agentKey, deps.config.secretValues, deps.config.sandbox);
  let ran = false;
  const handle = async (
    _name: string,
    input: Record<string, unknown>,
    mcpSignal: AbortSignal,
  ): Promise<CallToolResult> => {
    if (admission?.kind === 'refused') return toolResult({ error: admission.refusal }, filter, true);
    if (admission?.kind !== 'admitted') {
      return toolResult({ error: { code: 'INVALID_INPUT', message: 'The call could not be checked.' } }, filter, true);
    }
    ran = true;
    const outcome = await runAdmittedCall(callDeps, admission, principal, input, {
      signal: AbortSignal.any([c.req.raw.signal, mcpSignal]),
      requestId,
    });
    return outcome.ok ? toolResult(outcome.result, filter) : toolResult({ error: outcome.error }, filter, true);
  };

  const server = createSandboxMcpServer(sandboxToolDefinitions(deps.config.sandbox), handle);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  try {
    await server.connect(transport);
    return await transport.handleRequest(c.req.raw, { parsedBody: message });
  } finally {
    await server.close().catch(() => undefined);
    if (admission?.kind === 'admitted' && !ran) {
      // The SDK refused the call before it reached the tool: give the slot back now.
      await releaseWorkspaceLease(deps.database.db, admission.leaseId).catch(() => undefined);
    }
  }
}
