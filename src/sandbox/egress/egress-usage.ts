import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema } from '../../db/schema.js';
import { nextUtcDay, utcDay } from '../../utc-days.js';

type Db = Kysely<DatabaseSchema>;

/** Milliseconds from `at` to the next UTC midnight, when the daily cap starts afresh. */
export function untilNextUtcDay(at: number): number {
  return nextUtcDay(at).getTime() - at;
}

/**
 * Adds `bytes` to the workspace's egress of the day of `at` and returns the day's total, in one
 * statement, so replicas adding at once never lose each other's bytes.
 */
export async function addEgressBytes(db: Db, workspaceId: string, bytes: number, at: number): Promise<number> {
  const row = await db
    .insertInto('egress_usage')
    .values({ workspace_id: workspaceId, day: utcDay(at), bytes })
    .onConflict((conflict) =>
      conflict.columns(['workspace_id', 'day']).doUpdateSet({ bytes: sql`egress_usage.bytes + excluded.bytes` }),
    )
    .returning('bytes')
    .executeTakeFirstOrThrow();
  return Number(row.bytes);
}

/** Bytes the workspace moved on the day of `at` so far. */
export async function egressBytesOfDay(db: Db, workspaceId: string, at: number): Promise<number> {
  const row = await db
    .selectFrom('egress_usage')
    .select('bytes')
    .where('workspace_id', '=', workspaceId)
    .where('day', '=', utcDay(at))
    .executeTakeFirst();
  return Number(row?.bytes ?? 0);
}
