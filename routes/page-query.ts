import { z } from '@hono/zod-openapi';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../src/pagination/keyset.js';

/** The `?limit&cursor` fields of every paginated listing, to spread into its query schema. */
export const PAGE_QUERY_FIELDS = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .openapi({ description: `Items per page, 1 to ${MAX_PAGE_SIZE}.`, example: DEFAULT_PAGE_SIZE }),
  cursor: z
    .string()
    .min(1)
    .max(400)
    .optional()
    .openapi({ description: 'The `nextCursor` of the previous page (opaque).' }),
};

/** `{ items, nextCursor }` of `item`, registered as the OpenAPI component `name`. */
export const pageOf = <Item extends z.ZodType>(item: Item, name: string) =>
  z
    .object({
      items: z.array(item),
      nextCursor: z
        .string()
        .nullable()
        .openapi({ description: 'Pass as `cursor` for the next page; null on the last.' }),
    })
    .openapi(name);
