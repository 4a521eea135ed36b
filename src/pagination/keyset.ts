import { type SelectQueryBuilder, sql } from 'kysely';
import { type CursorPosition, decodeCursor, encodeCursor, type Page } from './cursor.js';

/** Items per page when the caller does not say. */
export const DEFAULT_PAGE_SIZE = 50;
/** The most items one page holds. */
export const MAX_PAGE_SIZE = 100;

/** What a listing is asked for: a page size and, after the first page, the previous `nextCursor`. */
export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

/**
 * The two columns a keyset listing is ordered by, and which way. The time column comes first and
 * the unique key breaks ties, so the order is total and a cursor never skips or repeats a row.
 */
export interface KeysetOrder {
  at: string;
  key: string;
  direction: 'asc' | 'desc';
}

/**
 * Narrows `query` to one page in `order`: the rows after the cursor, ordered, one more than the
 * limit (so `toPage` can tell whether another page follows). Throws 400 `VALIDATION_FAILED` on
 * `cursor` for a cursor this service did not mint.
 *
 * @example
 * const rows = await keysetPage(db.selectFrom('tenants').selectAll(), BY_CREATION, page).execute();
 * return toPage(rows, page.limit, (row) => ({ at: row.created_at, key: row.id }), toTenant);
 */
export function keysetPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  order: KeysetOrder,
  page: PageRequest,
): SelectQueryBuilder<DB, TB, O> {
  const at = sql.ref(order.at);
  const key = sql.ref(order.key);
  let narrowed = query;
  if (page.cursor !== undefined) {
    const position = decodeCursor(page.cursor);
    const beyond = order.direction === 'asc' ? '>' : '<';
    narrowed = narrowed.where((eb) =>
      eb.or([eb(at, beyond, position.at), eb.and([eb(at, '=', position.at), eb(key, beyond, position.key)])]),
    );
  }
  return narrowed
    .orderBy(at, order.direction)
    .orderBy(key, order.direction)
    .limit(page.limit + 1);
}

/**
 * Cuts the `limit + 1` rows `keysetPage` fetched into a page: the extra row, when present, only
 * says that another page exists, and the cursor points after the last row kept.
 */
export function toPage<Row, Item>(
  rows: readonly Row[],
  limit: number,
  positionOf: (row: Row) => CursorPosition,
  toItem: (row: Row) => Item,
): Page<Item> {
  const kept = rows.slice(0, limit);
  const last = kept.at(-1);
  return {
    items: kept.map(toItem),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(positionOf(last)) : null,
  };
}
