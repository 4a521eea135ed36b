/**
 * The usage page's pure rules: the date range it asks for, the daily series it draws (days
 * without a row are zeros), totals, and the CSV link. No React here, so they are unit-tested.
 */
import { withQuery } from './api.js';
import type { UsageGroupBy, UsageRow } from './types.js';

const DAY_MS = 86_400_000;
/** The range the page opens on: the last 30 UTC days, today included. */
export const DEFAULT_RANGE_DAYS = 30;
/** The longest range the usage API answers. */
export const MAX_RANGE_DAYS = 366;

/** An inclusive range of UTC days, each `YYYY-MM-DD`. */
export interface DayRange {
  from: string;
  to: string;
}

/** The UTC day of an instant, `YYYY-MM-DD`. */
export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Midnight UTC of a `YYYY-MM-DD` day, in epoch ms; NaN for anything else (`2026-02-30` included). */
export function dayStart(day: string): number {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return Number.NaN;
  const time = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(time) || utcDay(new Date(time)) !== day ? Number.NaN : time;
}

/**
 * The last `days` UTC days up to and including the day of `now`.
 *
 * @example
 * defaultRange(new Date('2026-12-04T16:00:00Z')); // { from: '2026-11-05', to: '2026-12-04' }
 */
export function defaultRange(now: Date, days = DEFAULT_RANGE_DAYS): DayRange {
  const to = utcDay(now);
  return { from: utcDay(new Date(dayStart(to) - (days - 1) * DAY_MS)), to };
}

/** How many days an inclusive range covers (NaN when a bound is not a day). */
export function rangeDays(range: DayRange): number {
  return Math.round((dayStart(range.to) - dayStart(range.from)) / DAY_MS) + 1;
}

/** Why a range cannot be asked for, in a sentence to show; undefined when it can. */
export function rangeProblem(range: DayRange): string | undefined {
  if (Number.isNaN(dayStart(range.from))) return 'Choose a valid start date.';
  if (Number.isNaN(dayStart(range.to))) return 'Choose a valid end date.';
  const days = rangeDays(range);
  if (days < 1) return 'The start date must not be after the end date.';
  if (days > MAX_RANGE_DAYS) return `Choose at most ${MAX_RANGE_DAYS} days (this range has ${days}).`;
  return undefined;
}

/** One day of the chart. */
export interface DayPoint {
  day: string;
  inputTokens: number;
  outputTokens: number;
  sandboxCpuSeconds: number;
}

/**
 * Every day of `range` in order, with the counters of its `groupBy=day` rows (summed, should the
 * API send one day twice) and zeros for days without a row. Rows outside the range are left out.
 */
export function dailySeries(rows: readonly UsageRow[], range: DayRange): DayPoint[] {
  const byDay = new Map<string, DayPoint>();
  const start = dayStart(range.from);
  const days = rangeDays(range);
  if (Number.isNaN(days)) return [];
  const points: DayPoint[] = [];
  for (let index = 0; index < days; index += 1) {
    const point = {
      day: utcDay(new Date(start + index * DAY_MS)),
      inputTokens: 0,
      outputTokens: 0,
      sandboxCpuSeconds: 0,
    };
    byDay.set(point.day, point);
    points.push(point);
  }
  for (const row of rows) {
    const point = row.day === undefined ? undefined : byDay.get(row.day);
    if (!point) continue;
    point.inputTokens += row.inputTokens;
    point.outputTokens += row.outputTokens;
    point.sandboxCpuSeconds += row.sandboxCpuSeconds;
  }
  return points;
}

/** The turns of `rows` whose model reported no token usage. */
export function turnsWithoutUsage(rows: readonly UsageRow[]): number {
  return rows.reduce((sum, row) => sum + row.turnsWithoutUsage, 0);
}

/** The query of the tenant's usage over `range`, grouped by `groupBy`. */
export function usageQuery(tenantId: string, range: DayRange, groupBy: UsageGroupBy) {
  return { tenantId, from: range.from, to: range.to, groupBy };
}

/**
 * The CSV of the same query. A plain link works with the console session: a download is a
 * same-origin GET, which carries the session cookie and needs no CSRF token.
 *
 * @example
 * usageCsvHref('ten_1', { from: '2026-11-05', to: '2026-12-04' }, 'day');
 * // '/v1/admin/usage?tenantId=ten_1&from=2026-11-05&to=2026-12-04&groupBy=day&format=csv'
 */
export function usageCsvHref(tenantId: string, range: DayRange, groupBy: UsageGroupBy): string {
  return withQuery('/v1/admin/usage', { ...usageQuery(tenantId, range, groupBy), format: 'csv' });
}

/** The file name a CSV download is saved under. */
export function usageCsvFilename(tenantId: string, range: DayRange, groupBy: UsageGroupBy): string {
  const safe = tenantId.replace(/[^A-Za-z0-9_-]/g, '_');
  return `usage-${safe}-${range.from}-${range.to}-by-${groupBy}.csv`;
}
