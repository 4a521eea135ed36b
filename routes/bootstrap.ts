import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AgentConfig } from '../src/agents/config-schema.js';
import type { AppDependencies } from '../src/dependencies.js';
import { SANDBOXES_OFF_HEADER, sandboxesTurnedOff } from '../src/hosted/proxy-headers.js';
import type { AppEnv } from '../src/http/app-env.js';
import { agentAuth } from '../src/http/auth-middleware.js';
import { AGENT_AUTH_RESPONSES, AGENT_SECURITY, UserHeaderSchema } from '../src/http/openapi.js';
import { resolveCallerUploadPolicy } from '../src/uploads/caller-policy.js';
import { DEFAULT_UPLOAD_TYPES } from '../src/uploads/media-types.js';
import { pickerAccept, type UploadPolicy } from '../src/uploads/upload-policy.js';

const BootstrapSchema = z
  .object({
    features: z.object({
      attachments: z.object({
        enabled: z.boolean().openapi({ description: 'Show the attach button.' }),
        accept: z.array(z.string()).openapi({
          description:
            'Picker hint: MIME types (`image/*` while managed sandboxes are closed and the agent names no types) and extensions.',
        }),
        maxBytes: z.number().int().openapi({ description: 'Picker hint: the largest file accepted.' }),
      }),
    }),
  })
  .openapi('Bootstrap');

/** The picker a chat widget offered before managed sandboxes: any image (the upload route decides). */
const DEFAULT_PICKER = ['image/*'];
const DEFAULT_IMAGE_TYPES = DEFAULT_UPLOAD_TYPES.filter((type) => type.startsWith('image/'));

/**
 * The picker's `accept` hint. While managed sandboxes are open it lists the policy's types (the
 * managed documents included). Otherwise the widget keeps the picker it always had: the agent's
 * own `attachments.accept` narrowed to the policy, or `image/*` — the image types by name when
 * the operator accepts only some of them.
 */
function acceptHint(policy: UploadPolicy, publishedConfig: AgentConfig, gateOpen: boolean): string[] {
  if (gateOpen || publishedConfig.attachments?.accept !== undefined) return pickerAccept(policy);
  const images = [...policy.limits.keys()].filter((type) => type.startsWith('image/'));
  if (DEFAULT_IMAGE_TYPES.every((type) => images.includes(type))) return DEFAULT_PICKER;
  return images.length > 0 ? images : pickerAccept(policy);
}

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
      'The managed document set appears only while managed sandboxes are enabled and available (and the request did not turn them off with `X-Mordn-Sandboxes: off`); narrower picker preferences from the agent config are intersected. Otherwise the picker stays `image/*` unless the agent config names its own types.',
    security: AGENT_SECURITY,
    middleware: [agentAuth(deps.database.db, 'read')] as const,
    request: { headers: UserHeaderSchema },
    responses: {
      200: { description: 'Features.', content: { 'application/json': { schema: BootstrapSchema } } },
      ...AGENT_AUTH_RESPONSES,
    },
  });
  app.openapi(route, async (c) => {
    const { policy, publishedConfig, sandbox } = await resolveCallerUploadPolicy(deps, c.get('principal'), {
      sandboxesOff: sandboxesTurnedOff(c.req.header(SANDBOXES_OFF_HEADER)),
    });
    const accept = acceptHint(policy, publishedConfig, sandbox.available);
    c.header('Cache-Control', 'private, no-store');
    return c.json({ features: { attachments: { enabled: policy.enabled, accept, maxBytes: policy.maxBytes } } }, 200);
  });
}
