import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { readTenantUsage } from '../src/admin/tenant-usage.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { ADMIN_ROUTE, json, TenantParams } from './admin-schemas.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** The range when `from` is left out: the 30 days up to `to`. */
const DEFAULT_RANGE_DAYS = 30;

const Instant = (description: string) =>
  z.iso.datetime({ offset: true }).optional().openapi({ description, example: '2026-01-01T00:00:00Z' });

const UsageQuery = z.strictObject({
  from: Instant(`ISO 8601, inclusive; defaults to ${DEFAULT_RANGE_DAYS} days before \`to\`.`),
  to: Instant('ISO 8601, exclusive; defaults to now.'),
});

const TenantUsageSchema = z
  .object({
    tenantId: z.string(),
    from: z.string().openapi({ description: 'ISO 8601, inclusive.' }),
    to: z.string().openapi({ description: 'ISO 8601, exclusive.' }),
    toolCalls: z.number().int().openapi({ description: 'Sandbox tool calls that ran (refused calls not counted).' }),
    execSeconds: z.number().openapi({ description: 'Wall-clock seconds of `sandbox_exec` calls.' }),
    bytesStored: z
      .number()
      .int()
      .openapi({ description: 'Bytes of the uploads and artifacts stored in the range that are still kept.' }),
    chats: z.number().int().openapi({ description: 'Conversations started in the range that are still stored.' }),
    downloads: z
      .number()
      .int()
      .openapi({ description: 'Artifact downloads served or redirected (refusals of revoked files not counted).' }),
  })
  .openapi('TenantUsage');

const usageRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/tenants/{tenantId}/usage',
  summary: "A tenant's usage over a time range: tool calls, exec seconds, bytes stored, chats, downloads.",
  request: { params: TenantParams, query: UsageQuery },
  responses: { 200: { description: 'The figures.', ...json(TenantUsageSchema) }, ...problemResponses(400, 401, 404) },
});

/** The range as epoch ms; `from` must come before `to`. */
function rangeOf(query: z.infer<typeof UsageQuery>, now: number): { from: number; to: number } {
  const to = query.to === undefined ? now : Date.parse(query.to);
  const from = query.from === undefined ? to - DEFAULT_RANGE_DAYS * DAY_MS : Date.parse(query.from);
  if (from >= to) {
    throw new ServiceError('VALIDATION_FAILED', 'Query from: must be before to.', {
      errors: [{ path: 'from', message: 'must be before to' }],
    });
  }
  return { from, to };
}

/** `GET /v1/admin/tenants/:tenantId/usage`; registered by the admin routes, behind the admin token. */
export function registerAdminUsageRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  app.openapi(usageRoute, async (c) => {
    const { from, to } = rangeOf(c.req.valid('query'), Date.now());
    return c.json(await readTenantUsage(db, c.req.valid('param').tenantId, from, to), 200);
  });
}
