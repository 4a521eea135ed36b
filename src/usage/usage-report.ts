import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { COUNTER_COLUMNS } from './usage-ledger.js';
import { USAGE_COUNTERS, type UsageCounter } from './usage-types.js';

type Db = Kysely<DatabaseSchema>;

export type UsageGrouping = 'tenant' | 'day' | 'agent' | 'user';

/** What `GET /v1/admin/usage` asks for: optional filters, an inclusive UTC day range, one grouping. */
export interface UsageQuery {
  tenantId?: string | undefined;
  agentId?: string | undefined;
  userId?: string | undefined;
  /** `YYYY-MM-DD`, inclusive. */
  from: string;
  /** `YYYY-MM-DD`, inclusive. */
  to: string;
  groupBy: UsageGrouping;
}

/** One row of the report: its group's keys, then every counter summed over the range. */
export type UsageRow = {
  tenantId: string;
  agentId?: string;
  userId?: string;
  day?: string;
} & Record<UsageCounter, number>;

/** The columns each grouping reports by, in the order rows are sorted (and the cursor continues). */
const GROUP_COLUMNS = {
  tenant: ['tenant_id'],
  day: ['tenant_id', 'day'],
  agent: ['tenant_id', 'agent_id'],
  user: ['tenant_id', 'agent_id', 'user_id'],
} as const satisfies Record<UsageGrouping, readonly string[]>;

type GroupColumn = (typeof GROUP_COLUMNS)[UsageGrouping][number];

const KEY_NAMES: Record<GroupColumn, 'tenantId' | 'agentId' | 'userId' | 'day'> = {
  tenant_id: 'tenantId',
  agent_id: 'agentId',
  user_id: 'userId',
  day: 'day',
};

/** The keys of one row, as the opaque cursor after it. */
function encodeUsageCursor(keys: string[]): string {
  return Buffer.from(JSON.stringify(keys)).toString('base64url');
}

function decodeUsageCursor(cursor: string, length: number): string[] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === length && value.every((key) => typeof key === 'string')) {
      return value as string[];
    }
  } catch {
    // Reported below like any other malformed cursor.
  }
  throw new ServiceError('VALIDATION_FAILED', 'Query cursor: not a cursor this service returned for this groupBy.', {
    errors: [{ path: 'cursor', message: 'not a cursor this service returned for this groupBy' }],
  });
}

/**
 * One page of summed usage rows, ordered by the grouping's keys. `limit` rows at most; the next
 * page starts after the last row's keys (a keyset, so rows written meanwhile never shift a page).
 *
 * @example
 * const page = await readUsage(db, { tenantId, from: '2026-11-01', to: '2026-11-30', groupBy: 'day' }, { limit: 100 });
 */
export async function readUsage(
  db: Db,
  query: UsageQuery,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ items: UsageRow[]; nextCursor: string | null }> {
  const keys = GROUP_COLUMNS[query.groupBy];
  let select = db
    .selectFrom('usage_daily')
    .select(keys)
    .select((eb) =>
      USAGE_COUNTERS.map((counter) =>
        eb.fn.sum<number | string>(COUNTER_COLUMNS[counter]).as(COUNTER_COLUMNS[counter]),
      ),
    )
    .where('day', '>=', query.from)
    .where('day', '<=', query.to);
  if (query.tenantId !== undefined) select = select.where('tenant_id', '=', query.tenantId);
  if (query.agentId !== undefined) select = select.where('agent_id', '=', query.agentId);
  if (query.userId !== undefined) select = select.where('user_id', '=', query.userId);
  if (page.cursor !== undefined) {
    const after = decodeUsageCursor(page.cursor, keys.length);
    select = select.where(
      sql<boolean>`(${sql.join(keys.map((key) => sql.ref(key)))}) > (${sql.join(after.map((key) => sql.val(key)))})`,
    );
  }
  let grouped = select.groupBy([...keys]);
  for (const key of keys) grouped = grouped.orderBy(key);
  const rows = (await grouped.limit(page.limit + 1).execute()) as Array<Record<string, unknown>>;
  const items = rows.slice(0, page.limit).map((row) => {
    const item: Record<string, string | number> = {};
    for (const key of keys) item[KEY_NAMES[key]] = String(row[key]);
    for (const counter of USAGE_COUNTERS) item[counter] = Number(row[COUNTER_COLUMNS[counter]] ?? 0);
    return item as UsageRow;
  });
  const last = rows.length > page.limit ? rows[page.limit - 1] : undefined;
  return { items, nextCursor: last ? encodeUsageCursor(keys.map((key) => String(last[key]))) : null };
}

/** The CSV header: the JSON keys of a row of `groupBy`, in order. */
export function usageCsvColumns(groupBy: UsageGrouping): string[] {
  return [...GROUP_COLUMNS[groupBy].map((key) => KEY_NAMES[key]), ...USAGE_COUNTERS];
}

/** A CSV field: quoted when it holds a comma, a quote or a line break; a leading formula sign is neutralised. */
function csvField(value: string | number | undefined): string {
  if (value === undefined) return '';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text) && typeof value === 'string') text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Rows as CSV (RFC 4180, CRLF line ends), the header first. */
export function usageCsv(groupBy: UsageGrouping, rows: readonly UsageRow[]): string {
  const columns = usageCsvColumns(groupBy);
  const lines = [columns.join(',')];
  for (const row of rows) lines.push(columns.map((column) => csvField(row[column as keyof UsageRow])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
