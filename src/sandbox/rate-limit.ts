import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';

export interface RateLimitDecision {
  allowed: boolean;
  /** Seconds until the current window ends (for `Retry-After`). */
  retryAfterSeconds: number;
}

/**
 * Counts one event against `key` in a fixed window and says whether it is within `limit`. The
 * count lives in the database, so every replica sees the same total.
 */
export async function consumeRateLimit(
  db: Kysely<DatabaseSchema>,
  key: string,
  options: { limit: number; windowMs: number; now?: number },
): Promise<RateLimitDecision> {
  const now = options.now ?? Date.now();
  const windowStart = now - (now % options.windowMs);
  const row = await db
    .insertInto('rate_limit_windows')
    .values({ key, window_start: windowStart, count: 1 })
    .onConflict((conflict) =>
      conflict.columns(['key', 'window_start']).doUpdateSet({ count: sql`rate_limit_windows.count + 1` }),
    )
    .returning('count')
    .executeTakeFirstOrThrow();
  return {
    allowed: row.count <= options.limit,
    retryAfterSeconds: Math.max(1, Math.ceil((windowStart + options.windowMs - now) / 1000)),
  };
}

/** Drops windows that ended before `before` (run by the sweeper). */
export async function pruneRateLimitWindows(db: Kysely<DatabaseSchema>, before: number): Promise<void> {
  await db.deleteFrom('rate_limit_windows').where('window_start', '<', before).execute();
}
