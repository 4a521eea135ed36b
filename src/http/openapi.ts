import { OpenAPIHono, z } from '@hono/zod-openapi';
import { ERROR_STATUS, type ErrorCode, ServiceError } from '../errors.js';
import { describeFieldErrors, toFieldErrors } from '../validation.js';
import type { AppEnv } from './app-env.js';

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: 'urn:mordn:problem:not-found' }),
    title: z.string().openapi({ example: 'Not Found' }),
    status: z.number().int().openapi({ example: 404 }),
    detail: z.string().openapi({ example: 'No such agent.' }),
    code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).openapi({
      example: 'NOT_FOUND',
      description: 'Stable UPPER_SNAKE error code (docs/api.md lists each with its status).',
    }),
    requestId: z.string().openapi({ example: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' }),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'Field-level problems (validation errors).' }),
    limit: z
      .enum(['tokensPerDay', 'tokensPerMonth', 'sandboxCpuSecondsPerDay', 'storageBytes'])
      .optional()
      .openapi({ description: '`LIMIT_REACHED`: which limit.' }),
    value: z.number().optional().openapi({ description: '`LIMIT_REACHED`: the limit as configured.' }),
    used: z.number().optional().openapi({ description: '`LIMIT_REACHED`: what is used of it now.' }),
    resetAt: z.iso
      .datetime()
      .nullable()
      .optional()
      .openapi({ description: '`LIMIT_REACHED`: the next UTC midnight or month start; null for storage.' }),
  })
  .openapi('Problem');

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (the detail and `errors` name the offending fields).',
  401: 'Missing, malformed, unknown or revoked credentials.',
  403: 'The key lacks the permission, or the user may not use this operation.',
  404: 'Not found.',
  405: 'The method is not served on this path (see `Allow`).',
  408: 'The client stopped sending the request before it was complete.',
  409: 'Conflicts with the current state.',
  413: 'The request body exceeds its limit.',
  415: 'Unsupported request media type.',
  429: 'Rate limited (see Retry-After), or a usage limit reached (`LIMIT_REACHED`, see `resetAt`).',
  503: 'Temporarily unavailable.',
};

/** Problem+json responses for the given statuses, to spread into a route's `responses`. */
export function problemResponses(...statuses: Array<keyof typeof PROBLEM_DESCRIPTIONS>) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: PROBLEM_DESCRIPTIONS[status] as string,
        content: { 'application/problem+json': { schema: ProblemSchema } },
      },
    ]),
  );
}

/** Responses every agent route can give: authentication, user header and permission failures. */
export const AGENT_AUTH_RESPONSES = problemResponses(400, 401, 403);

export const AGENT_SECURITY = [{ agentKey: [] }];
export const ADMIN_SECURITY = [{ adminToken: [] }];

export const UserHeaderSchema = z.object({
  'x-chat-user': z
    .string()
    .min(1)
    .max(256)
    .openapi({
      param: { name: 'x-chat-user', in: 'header', required: true },
      description:
        'The verified end-user id, used exactly as sent: 1–256 printable ASCII characters, no commas, no leading or trailing spaces, sent once. `anon:` ids (any letter case) are refused on sandbox routes.',
      example: 'user_42',
    }),
});

/**
 * An OpenAPI-aware Hono app whose request validation failures become 400 `VALIDATION_FAILED`
 * problems naming each offending field.
 */
export function createOpenApiApp(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      const errors = toFieldErrors(result.error);
      const subject = result.target === 'json' ? 'request body' : `request ${result.target}`;
      throw new ServiceError('VALIDATION_FAILED', describeFieldErrors(subject, errors), { errors });
    },
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'agentKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'An agent API key (`mordn_…`). Agent routes also require the `X-Chat-User` header.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'adminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token from `MORDN_ADMIN_TOKEN`.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'metricsToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The token from `MORDN_METRICS_TOKEN`, when the operator set one for `/metrics`.',
  });
  return app;
}

export const OPENAPI_INFO = {
  openapi: '3.1.0',
  info: {
    title: 'Mordn API',
    version: '1',
    description:
      'Multi-tenant chat handler with managed sandboxes. Errors are `application/problem+json` with a stable `code`.',
  },
} as const;
