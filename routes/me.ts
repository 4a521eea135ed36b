import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { PERMISSIONS } from '../src/auth/permissions.js';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, UserHeaderSchema } from '../src/http/openapi.js';

const WhoAmISchema = z
  .object({
    tenantId: z.string(),
    agentId: z.string(),
    userId: z.string(),
    permissions: z.array(z.enum(PERMISSIONS)),
  })
  .openapi('WhoAmI');

/** Lets an integrator check a key and user header before wiring anything else. */
export function registerMeRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const route = createRoute({
    method: 'get',
    path: '/v1/me',
    tags: ['Agent'],
    summary: 'Who the key and X-Chat-User header authenticate as.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(deps.database.db, 'read')] as const,
    request: { headers: UserHeaderSchema },
    responses: {
      200: { description: 'The authenticated scope.', content: { 'application/json': { schema: WhoAmISchema } } },
      ...AGENT_AUTH_RESPONSES,
    },
  });
  app.openapi(route, (c) => {
    const principal = c.get('principal');
    return c.json(
      {
        tenantId: principal.tenantId,
        agentId: principal.agentId,
        userId: principal.userId,
        permissions: [...principal.permissions],
      },
      200,
    );
  });
}
