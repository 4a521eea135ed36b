/** UTC calendar days: the days usage is counted by and daily limits and caps reset on. */

/** The UTC day of `at` (epoch ms) as `YYYY-MM-DD`. */
export function utcDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The first instant of the next UTC day after `at`. */
export function nextUtcDay(at: number): Date {
  const next = new Date(at);
  next.setUTCHours(24, 0, 0, 0);
  return next;
}

/** The first instant of the next UTC calendar month after `at`. */
export function nextUtcMonth(at: number): Date {
  const now = new Date(at);
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}
