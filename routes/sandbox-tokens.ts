import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { getEffectiveConfig } from '../src/agents/agent-configs.js';
import { PERMISSIONS } from '../src/auth/permissions.js';
import {
  DEFAULT_SANDBOX_TOKEN_SECONDS,
  MIN_SANDBOX_TOKEN_SECONDS,
  mintSandboxToken,
  revokeAllSandboxTokens,
  revokeSandboxToken,
  type SandboxTokenOwner,
  sandboxMcpAudience,
} from '../src/auth/sandbox-tokens.js';
import { SANDBOX_TOOL_NAMES } from '../src/config.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { jsonBody } from '../src/http/json-body.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, problemResponses, UserHeaderSchema } from '../src/http/openapi.js';
import { evaluateSandboxGate, type SandboxGateLeg, sandboxGateDependencies } from '../src/sandbox/gate.js';

const JSON_LIMIT = 16 * 1024;

/** Gate legs that say "not for this agent or tenant" (a backend not ready now is no reason to refuse a token). */
const POLICY_LEGS: readonly SandboxGateLeg[] = ['published-config', 'operator-switch', 'tenant-not-allowed'];

const ToolNameSchema = z.enum(SANDBOX_TOOL_NAMES);
const TokenPermissionsSchema = z
  .array(z.enum(PERMISSIONS))
  .refine(
    (permissions) =>
      new Set(permissions).size === permissions.length &&
      permissions.includes('read') &&
      permissions.length <= PERMISSIONS.length,
    'must be ["read"] or ["read","write"]',
  )
  .openapi({ example: ['read', 'write'], description: '`["read"]` (discovery only) or `["read","write"]` (default).' });

/** The hard ceiling of a token's lifetime; the operator's `MORDN_SANDBOX_TOKEN_MAX_SECONDS` may only lower it. */
const MAX_SANDBOX_TOKEN_SECONDS = 86_400;

const MintBodySchema = z
  .object({
    ttlSeconds: z
      .number()
      .int()
      .min(MIN_SANDBOX_TOKEN_SECONDS, `must be at least ${MIN_SANDBOX_TOKEN_SECONDS} seconds`)
      .max(MAX_SANDBOX_TOKEN_SECONDS, `must be at most ${MAX_SANDBOX_TOKEN_SECONDS} seconds`)
      .optional()
      .openapi({
        description: `Lifetime in seconds; default ${DEFAULT_SANDBOX_TOKEN_SECONDS}, at most the operator's \`MORDN_SANDBOX_TOKEN_MAX_SECONDS\` (default 3600, never above ${MAX_SANDBOX_TOKEN_SECONDS}).`,
        example: 900,
      }),
    permissions: TokenPermissionsSchema.optional(),
    tools: z
      .array(ToolNameSchema)
      .min(1)
      .optional()
      .openapi({ description: 'A non-empty subset of the six sandbox tools; default all of them.' }),
  })
  .strict()
  .openapi('SandboxTokenRequest');

const MintedSchema = z
  .object({
    id: z.string().openapi({ example: 'tok_3f9c1a0e5b7d2c4e6a8b0c1d' }),
    token: z.string().openapi({ description: 'Shown only here; stored hashed.', example: 'mordn_mcp_…' }),
    expiresAt: z.string().openapi({ example: '2026-01-01T12:15:00.000Z' }),
    permissions: z.array(z.enum(PERMISSIONS)),
    tools: z.array(ToolNameSchema),
  })
  .openapi('SandboxToken');

const TokenParams = z.object({
  id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: 'tok_3f9c1a0e5b7d2c4e6a8b0c1d' }),
});

function ownerOf(c: Context<AppEnv>): SandboxTokenOwner {
  const { tenantId, agentId, userId } = c.get('principal');
  return { tenantId, agentId, userId };
}

/**
 * `POST /v1/sandbox/tokens` and `DELETE /v1/sandbox/tokens[/:id]`: short-lived bearer tokens a
 * host hands to an MCP client (its own or a third party's) so it can reach one user's sandbox
 * workspace through `/v1/sandbox/mcp`, and nowhere else, without holding the agent key. Managed
 * with the agent key (write) and the user's `X-Chat-User`; a token itself is refused here.
 */
export function registerSandboxTokenRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  const audience = sandboxMcpAudience(deps.config.publicUrl);
  const writeAuth = agentAuth(db, 'write', { rejectAnonymous: true });

  app.openAPIRegistry.registerComponent('securitySchemes', 'sandboxToken', {
    type: 'http',
    scheme: 'bearer',
    description:
      'A per-user sandbox token (`mordn_mcp_…`) from `POST /v1/sandbox/tokens`: valid on `POST /v1/sandbox/mcp` only, without `X-Chat-User`.',
  });

  const mintRoute = createRoute({
    method: 'post',
    path: '/v1/sandbox/tokens',
    tags: ['Sandbox'],
    summary: "Mint a short-lived bearer token for this user's sandbox MCP endpoint (shown once, stored hashed).",
    description:
      "The token is bound to this tenant, agent and user, to the audience `<MORDN_PUBLIC_URL>/v1/sandbox/mcp`, to its permissions and tools. It is accepted on `POST /v1/sandbox/mcp` only; revoking it, all of the user's tokens or the agent key that minted it makes it fail on the next request. Refused (503 `MANAGED_SANDBOX_UNAVAILABLE`) when the agent's published config, the operator switch or the tenant list keeps sandboxes closed.",
    security: AGENT_SECURITY,
    middleware: [
      writeAuth,
      jsonBody({ maxBytes: JSON_LIMIT, idleTimeoutMs: deps.config.requestIdleTimeoutMs }),
    ] as const,
    request: {
      headers: UserHeaderSchema,
      body: {
        required: false,
        content: { 'application/json': { schema: MintBodySchema } },
      },
    },
    responses: {
      201: { description: 'Minted.', content: { 'application/json': { schema: MintedSchema } } },
      ...AGENT_AUTH_RESPONSES,
      ...problemResponses(413, 415, 503),
    },
  });
  app.openapi(mintRoute, async (c) => {
    const principal = c.get('principal');
    const body = c.req.valid('json') ?? {};
    const maxSeconds = deps.config.sandbox.tokenMaxSeconds;
    if (body.ttlSeconds !== undefined && body.ttlSeconds > maxSeconds) {
      // Refused rather than clamped: the caller would otherwise hold a token shorter than it asked for.
      const message = `must be at most ${maxSeconds} seconds (MORDN_SANDBOX_TOKEN_MAX_SECONDS)`;
      throw new ServiceError('VALIDATION_FAILED', `Invalid request body: ttlSeconds: ${message}.`, {
        errors: [{ path: 'ttlSeconds', message }],
      });
    }
    const status = await evaluateSandboxGate(sandboxGateDependencies(deps), {
      publishedConfig: await getEffectiveConfig(db, principal.agentId),
      tenantId: principal.tenantId,
      userId: principal.userId,
    });
    if (status.closedBy && POLICY_LEGS.includes(status.closedBy)) {
      deps.logger.info({ requestId: c.get('requestId'), gate: status.closedBy }, 'sandbox token refused: gate closed');
      throw new ServiceError(
        'MANAGED_SANDBOX_UNAVAILABLE',
        'Managed sandboxes are not enabled for this agent, so no sandbox token can be minted.',
      );
    }
    const minted = await mintSandboxToken(db, {
      owner: ownerOf(c),
      // The console preview's tokens end with its session; every other token with its agent key.
      issuer: principal.consoleSessionId
        ? { consoleSessionId: principal.consoleSessionId }
        : { apiKeyId: principal.keyId },
      audience,
      ttlSeconds: body.ttlSeconds ?? Math.min(DEFAULT_SANDBOX_TOKEN_SECONDS, maxSeconds),
      permissions: body.permissions ?? ['read', 'write'],
      tools: body.tools,
    });
    c.header('Cache-Control', 'no-store');
    return c.json(minted, 201);
  });

  const revokeRoute = createRoute({
    method: 'delete',
    path: '/v1/sandbox/tokens/{id}',
    tags: ['Sandbox'],
    summary: "Revoke one of this user's sandbox tokens; it fails from the next request on.",
    description: "Another user's (or agent's) token id answers 404 like a missing one. Revoking twice is harmless.",
    security: AGENT_SECURITY,
    middleware: [writeAuth] as const,
    request: { headers: UserHeaderSchema, params: TokenParams },
    responses: { 204: { description: 'Revoked.' }, ...AGENT_AUTH_RESPONSES, ...problemResponses(404) },
  });
  app.openapi(revokeRoute, async (c) => {
    await revokeSandboxToken(db, ownerOf(c), c.req.valid('param').id);
    return c.body(null, 204);
  });

  const revokeAllRoute = createRoute({
    method: 'delete',
    path: '/v1/sandbox/tokens',
    tags: ['Sandbox'],
    summary: 'Revoke every sandbox token of this user (for this agent); they fail from the next request on.',
    security: AGENT_SECURITY,
    middleware: [writeAuth] as const,
    request: { headers: UserHeaderSchema },
    responses: { 204: { description: 'Revoked.' }, ...AGENT_AUTH_RESPONSES },
  });
  app.openapi(revokeAllRoute, async (c) => {
    await revokeAllSandboxTokens(db, ownerOf(c));
    return c.body(null, 204);
  });
}
