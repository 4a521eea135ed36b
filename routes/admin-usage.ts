import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { readTenantUsage } from '../src/admin/tenant-usage.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { readUsage, type UsageGrouping, usageCsv } from '../src/usage/usage-report.js';
import { USAGE_COUNTERS } from '../src/usage/usage-types.js';
import { utcDay } from '../src/utc-days.js';
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

/** The days a usage query may span, and the rows one CSV may hold. */
const MAX_RANGE_DAYS = 366;
const MAX_CSV_ROWS = 100_000;
const MAX_USAGE_PAGE = 1000;

const Day = (description: string) =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date as YYYY-MM-DD')
    .refine((day) => !Number.isNaN(Date.parse(`${day}T00:00:00Z`)) && utcDay(Date.parse(`${day}T00:00:00Z`)) === day, {
      message: 'must be a valid date',
    })
    .optional()
    .openapi({ description, example: '2026-11-01' });

const Id = (description: string) => z.string().min(1).max(256).optional().openapi({ description });

const AllUsageQuery = z.strictObject({
  tenantId: Id('Only this tenant.'),
  agentId: Id('Only this agent.'),
  userId: Id('Only this user (as the agent sent it; an erased user appears as `erased:<hash>`).'),
  from: Day('UTC date, inclusive; defaults to 29 days before `to`.'),
  to: Day('UTC date, inclusive; defaults to today.'),
  groupBy: z
    .enum(['day', 'agent', 'user'])
    .optional()
    .openapi({ description: 'One row per tenant and day, agent, or agent and user; absent: one row per tenant.' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_USAGE_PAGE)
    .default(100)
    .openapi({ description: `Rows per page, 1 to ${MAX_USAGE_PAGE} (JSON only).` }),
  cursor: z.string().min(1).max(2000).optional().openapi({ description: 'The `nextCursor` of the previous page.' }),
  format: z
    .enum(['json', 'csv'])
    .default('json')
    .openapi({ description: `\`csv\`: every row at once (at most ${MAX_CSV_ROWS}), header = the JSON keys.` }),
});

const UsageRowSchema = z
  .object({
    tenantId: z.string(),
    agentId: z.string().optional(),
    userId: z.string().optional(),
    day: z.string().optional(),
    ...Object.fromEntries(USAGE_COUNTERS.map((counter) => [counter, z.number()])),
  })
  .openapi('UsageRow');

const allUsageRoute = createRoute({
  ...ADMIN_ROUTE,
  method: 'get',
  path: '/v1/admin/usage',
  summary: 'Metered usage summed per tenant, or per tenant and day, agent, or user; JSON pages or CSV.',
  request: { query: AllUsageQuery },
  responses: {
    200: {
      description: 'The rows, ordered by their keys.',
      content: {
        'application/json': {
          schema: z.object({ items: z.array(UsageRowSchema), nextCursor: z.string().nullable() }).openapi('UsagePage'),
        },
        'text/csv': { schema: z.string() },
      },
    },
    ...problemResponses(400, 401),
  },
});

/** The inclusive day range of a usage query: 30 days up to today by default, at most 366. */
function dayRangeOf(query: { from?: string | undefined; to?: string | undefined }, now: number) {
  const to = query.to ?? utcDay(now);
  const from = query.from ?? utcDay(Date.parse(`${to}T00:00:00Z`) - (DEFAULT_RANGE_DAYS - 1) * DAY_MS);
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;
  if (days < 1) {
    throw new ServiceError('VALIDATION_FAILED', 'Query from: must not be after to.', {
      errors: [{ path: 'from', message: 'must not be after to' }],
    });
  }
  if (days > MAX_RANGE_DAYS) {
    throw new ServiceError('VALIDATION_FAILED', `Query from: the range spans at most ${MAX_RANGE_DAYS} days.`, {
      errors: [{ path: 'from', message: `the range spans at most ${MAX_RANGE_DAYS} days` }],
    });
  }
  return { from, to };
}

/**
 * `GET /v1/admin/usage` and `GET /v1/admin/tenants/:tenantId/usage`; registered by the admin
 * routes, behind the admin token (or a console session).
 */
export function registerAdminUsageRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies): void {
  const { db } = deps.database;
  app.openapi(allUsageRoute, async (c) => {
    const query = c.req.valid('query');
    const groupBy: UsageGrouping = query.groupBy ?? 'tenant';
    const filters = {
      tenantId: query.tenantId,
      agentId: query.agentId,
      userId: query.userId,
      ...dayRangeOf(query, Date.now()),
      groupBy,
    };
    if (query.format === 'csv') {
      const { items, nextCursor } = await readUsage(db, filters, { limit: MAX_CSV_ROWS, cursor: query.cursor });
      if (nextCursor !== null) {
        throw new ServiceError(
          'VALIDATION_FAILED',
          `Query format: a CSV holds at most ${MAX_CSV_ROWS} rows; narrow the range or the filters.`,
          { errors: [{ path: 'format', message: `a CSV holds at most ${MAX_CSV_ROWS} rows` }] },
        );
      }
      return c.body(usageCsv(groupBy, items), 200, {
        'Content-Type': 'text/csv; charset=utf-8',
        'Content-Disposition': `attachment; filename="usage-${filters.from}-${filters.to}.csv"`,
        'Cache-Control': 'no-store',
      });
    }
    return c.json(await readUsage(db, filters, { limit: query.limit, cursor: query.cursor }), 200);
  });
  app.openapi(usageRoute, async (c) => {
    const { from, to } = rangeOf(c.req.valid('query'), Date.now());
    return c.json(await readTenantUsage(db, c.req.valid('param').tenantId, from, to), 200);
  });
}
