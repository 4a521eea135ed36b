import { z } from '@hono/zod-openapi';
import { ADMIN_SECURITY } from '../src/http/openapi.js';
import type { PageRequest } from '../src/pagination/keyset.js';
import { PAGE_QUERY_FIELDS } from './page-query.js';

/** The schemas and helpers every admin route module shares. */

/** A tenant or agent name, for create and rename alike. */
export const Name = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters')
  .openapi({ example: 'Acme support' });

export const NameBody = z.object({ name: Name });

export const TenantParams = z.object({ tenantId: z.string().openapi({ param: { name: 'tenantId', in: 'path' } }) });
export const AgentParams = z.object({ agentId: z.string().openapi({ param: { name: 'agentId', in: 'path' } }) });

/** `?limit&cursor`, bounded exactly as the artifact listings are; unknown parameters are refused. */
export const PageQuery = z.strictObject(PAGE_QUERY_FIELDS);

export { pageOf } from './page-query.js';

/** The validated query as the listing functions take it. */
export function pageRequest(query: z.infer<typeof PageQuery>): PageRequest {
  return { limit: query.limit, ...(query.cursor === undefined ? {} : { cursor: query.cursor }) };
}

export const json = <Schema extends z.ZodType>(schema: Schema) => ({ content: { 'application/json': { schema } } });
export const body = <Schema extends z.ZodType>(schema: Schema) => ({ body: { ...json(schema), required: true } });
export const ADMIN_ROUTE = { tags: ['Admin'], security: ADMIN_SECURITY };
