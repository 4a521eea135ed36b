import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppDependencies } from '../src/dependencies.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, UserHeaderSchema } from '../src/http/openapi.js';
import { resolveCallerUploadPolicy } from '../src/uploads/caller-policy.js';
import { pickerAccept } from '../src/uploads/upload-policy.js';

const BootstrapSchema = z
  .object({
    features: z.object({
      attachments: z.object({
        enabled: z.boolean().openapi({ description: 'Show the attach button.' }),
        accept: z.array(z.string()).openapi({ description: 'Picker hint: MIME types and extensions.' }),
        maxBytes: z.number().int().openapi({ description: 'Picker hint: the largest file accepted.' }),
      }),
    }),
  })
  .openapi('Bootstrap');

/**
 * `GET /v1/bootstrap`: what the chat widget should offer. Hints only — the upload route decides
 * again on every request — and never configuration or credentials.
 */
export function registerBootstrapRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const route = createRoute({
    method: 'get',
    path: '/v1/bootstrap',
    tags: ['Agent'],
    summary: 'Widget features: the attach button and picker hints for this agent and user.',
    description:
      'The managed document set appears only while managed sandboxes are enabled and available; narrower picker preferences from the agent config are intersected.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(deps.database.db, 'read')] as const,
    request: { headers: UserHeaderSchema },
    responses: {
      200: { description: 'Features.', content: { 'application/json': { schema: BootstrapSchema } } },
      ...AGENT_AUTH_RESPONSES,
    },
  });
  app.openapi(route, async (c) => {
    const { policy } = await resolveCallerUploadPolicy(deps, c.get('principal'));
    c.header('Cache-Control', 'private, no-store');
    return c.json(
      {
        features: { attachments: { enabled: policy.enabled, accept: pickerAccept(policy), maxBytes: policy.maxBytes } },
      },
      200,
    );
  });
}
