import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { PROTECTED_RESOURCE_METADATA_PATH, sandboxMcpResource } from '../src/auth/sandbox-mcp-credentials.js';
import { SANDBOX_MCP_PATH } from '../src/auth/sandbox-tokens.js';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';

const MetadataSchema = z
  .object({
    resource: z.string().openapi({ example: 'https://api.example.com/v1/sandbox/mcp' }),
    resource_name: z.string(),
    bearer_methods_supported: z.array(z.literal('header')),
    resource_documentation: z.string(),
  })
  .openapi('ProtectedResourceMetadata');

/**
 * The OAuth protected-resource metadata (RFC 9728) of `/v1/sandbox/mcp`, at the well-known path
 * and at its path-suffixed form (§3.1: the well-known segment goes before the resource's path).
 * It lists no `authorization_servers` on purpose: tokens come from `POST /v1/sandbox/tokens`,
 * called by the host with its agent key, so an MCP client shown a 401 reports it instead of
 * starting a browser OAuth flow that could never succeed.
 */
export function registerWellKnownRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { audience } = sandboxMcpResource(deps.config.publicUrl);
  const metadata = {
    resource: audience,
    resource_name: 'Mordn sandbox MCP',
    bearer_methods_supported: ['header' as const],
    resource_documentation: `${deps.config.publicUrl.replace(/\/+$/, '')}/docs`,
  };
  for (const path of [PROTECTED_RESOURCE_METADATA_PATH, `${PROTECTED_RESOURCE_METADATA_PATH}${SANDBOX_MCP_PATH}`]) {
    const route = createRoute({
      method: 'get',
      path,
      tags: ['Sandbox'],
      summary: 'OAuth protected-resource metadata (RFC 9728) of the sandbox MCP endpoint; no authorization server.',
      description:
        'Unauthenticated and cacheable. Bearer tokens for the endpoint are an agent key with `X-Chat-User`, or a per-user token from `POST /v1/sandbox/tokens`; no OAuth flow issues them.',
      responses: {
        200: { description: 'The metadata.', content: { 'application/json': { schema: MetadataSchema } } },
      },
    });
    app.openapi(route, (c) => {
      c.header('Cache-Control', 'public, max-age=3600');
      return c.json(metadata, 200);
    });
  }
}
