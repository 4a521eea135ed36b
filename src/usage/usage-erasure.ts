import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { addingColumns, COUNTER_COLUMNS } from './usage-ledger.js';
import { USAGE_COUNTERS, type UsageOwner } from './usage-types.js';

type Db = Kysely<DatabaseSchema>;

/** What an erased user's usage rows carry instead of the user id. */
export function erasedUserId(hash: string): string {
  return `erased:${hash}`;
}

/** The owner's rows of one of the usage tables (the day rows, tool calls by tool, and each tool call). */
function owned(db: Db, table: 'usage_daily' | 'usage_tool_calls' | 'tool_calls', owner: UsageOwner) {
  return db
    .selectFrom(table as 'usage_daily')
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId);
}

/** How many usage rows still name the user (what erasure would pseudonymise). */
export async function countUsageRows(db: Db, owner: UsageOwner): Promise<number> {
  let total = 0;
  for (const table of ['usage_daily', 'usage_tool_calls', 'tool_calls'] as const) {
    const row = await owned(db, table, owner)
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    total += Number(row.count);
  }
  return total;
}

/**
 * Replaces the user id in the owner's usage rows with `erased:<keyed hash>`, in one transaction:
 * the sums stay true (a day row merges into one already erased under the same hash), and no row
 * names the user afterwards. Returns how many rows named them.
 */
export async function pseudonymiseUsage(db: Db, owner: UsageOwner, hash: string): Promise<number> {
  const erased = erasedUserId(hash);
  const before = await countUsageRows(db, owner);
  if (before === 0) return 0;
  const counters = USAGE_COUNTERS.map((counter) => COUNTER_COLUMNS[counter]);
  await db.transaction().execute(async (transaction) => {
    await transaction
      .insertInto('usage_daily')
      .columns(['tenant_id', 'agent_id', 'user_id', 'day', ...counters])
      .expression(
        owned(transaction, 'usage_daily', owner).select([
          'tenant_id',
          'agent_id',
          sql.val(erased).as('user_id'),
          'day',
          ...counters,
        ]),
      )
      .onConflict((conflict) =>
        conflict.columns(['tenant_id', 'day', 'agent_id', 'user_id']).doUpdateSet(addingColumns(counters)),
      )
      .execute();
    await transaction
      .insertInto('usage_tool_calls')
      .columns(['tenant_id', 'agent_id', 'user_id', 'day', 'tool', 'outcome', 'calls'])
      .expression(
        owned(transaction, 'usage_tool_calls', owner).select([
          'tenant_id',
          'agent_id',
          sql.val(erased).as('user_id'),
          'day',
          sql.ref('tool').as('tool'),
          sql.ref('outcome').as('outcome'),
          sql.ref('calls').as('calls'),
        ]),
      )
      .onConflict((conflict) =>
        conflict
          .columns(['tenant_id', 'day', 'agent_id', 'user_id', 'tool', 'outcome'])
          .doUpdateSet({ calls: sql`usage_tool_calls.calls + excluded.calls` }),
      )
      .execute();
    for (const table of ['usage_daily', 'usage_tool_calls'] as const) {
      await transaction
        .deleteFrom(table)
        .where('tenant_id', '=', owner.tenantId)
        .where('agent_id', '=', owner.agentId)
        .where('user_id', '=', owner.userId)
        .execute();
    }
    await transaction
      .updateTable('tool_calls')
      .set({ user_id: erased })
      .where('tenant_id', '=', owner.tenantId)
      .where('agent_id', '=', owner.agentId)
      .where('user_id', '=', owner.userId)
      .execute();
  });
  return before;
}
