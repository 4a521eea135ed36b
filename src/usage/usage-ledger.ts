import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema, UsageDailyTable } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { utcDay } from '../utc-days.js';
import { USAGE_COUNTERS, type UsageCounter, type UsageDelta, type UsageOwner, type UsageSink } from './usage-types.js';

type Db = Kysely<DatabaseSchema>;
type CounterColumn = Exclude<keyof UsageDailyTable, 'tenant_id' | 'agent_id' | 'user_id' | 'day'>;

/** The column of each counter. */
export const COUNTER_COLUMNS: Readonly<Record<UsageCounter, CounterColumn>> = {
  inputTokens: 'input_tokens',
  outputTokens: 'output_tokens',
  reasoningTokens: 'reasoning_tokens',
  cachedInputTokens: 'cached_input_tokens',
  turns: 'turns',
  turnsWithoutUsage: 'turns_without_usage',
  toolCalls: 'tool_calls',
  sandboxCpuSeconds: 'sandbox_cpu_seconds',
  sandboxMemoryGibSeconds: 'sandbox_memory_gib_seconds',
  diskGibHours: 'disk_gib_hours',
  artifactBytesPublished: 'artifact_bytes_published',
  artifactBytesDownloaded: 'artifact_bytes_downloaded',
  egressBytes: 'egress_bytes',
};

/** The counters of `delta` worth writing: finite and positive (counters only grow). */
function positive(delta: UsageDelta): Array<[CounterColumn, number]> {
  const columns: Array<[CounterColumn, number]> = [];
  for (const counter of USAGE_COUNTERS) {
    const value = delta[counter];
    if (value !== undefined && Number.isFinite(value) && value > 0) columns.push([COUNTER_COLUMNS[counter], value]);
  }
  return columns;
}

/** The update of an upsert into `usage_daily` that adds each column's new amount to the stored one. */
export function addingColumns(columns: readonly CounterColumn[]) {
  return Object.fromEntries(
    columns.map((column) => [column, sql`usage_daily.${sql.ref(column)} + excluded.${sql.ref(column)}`]),
  );
}

/**
 * Adds `delta` to the owner's row of the day of `at`, in one upsert: concurrent writers (other
 * requests, other replicas) each add their own amounts and none is lost or counted twice.
 */
export async function addUsage(db: Db, owner: UsageOwner, delta: UsageDelta, at: number): Promise<void> {
  const columns = positive(delta);
  if (columns.length === 0) return;
  await db
    .insertInto('usage_daily')
    .values({
      tenant_id: owner.tenantId,
      agent_id: owner.agentId,
      user_id: owner.userId,
      day: utcDay(at),
      ...Object.fromEntries(columns),
    })
    .onConflict((conflict) =>
      conflict
        .columns(['tenant_id', 'day', 'agent_id', 'user_id'])
        .doUpdateSet(addingColumns(columns.map(([column]) => column))),
    )
    .execute();
}

/**
 * Counts one tool call of the owner's day, by tool and outcome, and in the day's `toolCalls`:
 * two upserts, each atomic on its own (no transaction around them, which would double the
 * statements on the tool call's path).
 */
export async function addToolCallUsage(
  db: Db,
  owner: UsageOwner,
  call: { tool: string; ok: boolean },
  at: number,
): Promise<void> {
  await Promise.all([
    db
      .insertInto('usage_tool_calls')
      .values({
        tenant_id: owner.tenantId,
        agent_id: owner.agentId,
        user_id: owner.userId,
        day: utcDay(at),
        tool: call.tool,
        outcome: call.ok ? 'ok' : 'failed',
        calls: 1,
      })
      .onConflict((conflict) =>
        conflict
          .columns(['tenant_id', 'day', 'agent_id', 'user_id', 'tool', 'outcome'])
          .doUpdateSet({ calls: sql`usage_tool_calls.calls + 1` }),
      )
      .execute(),
    addUsage(db, owner, { toolCalls: 1 }, at),
  ]);
}

/** A sink that writes to the database, plus what the service needs around it. */
export interface UsageRecorder extends UsageSink {
  /** Counts one tool call (by tool and outcome) without blocking the caller. */
  addToolCall(owner: UsageOwner, call: { tool: string; ok: boolean }, at?: number): void;
  /** Resolves once every write started so far has ended (tests, shutdown). */
  flush(): Promise<void>;
}

/**
 * The database-backed `UsageSink`: writes start at once and never block or fail the caller (a
 * failed write is logged; the work it measured goes on). Usage is written at the end of each
 * model step and each tool call, so a crash loses at most what was in progress.
 *
 * @example
 * const usage = createUsageRecorder(database.db, logger);
 * usage.add({ tenantId, agentId, userId }, { inputTokens: 120, outputTokens: 40 });
 */
export function createUsageRecorder(db: Db, logger: Logger): UsageRecorder {
  const pending = new Set<Promise<void>>();
  const track = (write: Promise<void>, what: string) => {
    const settled = write.catch((error: unknown) => logger.warn({ err: error }, `usage not recorded: ${what}`));
    pending.add(settled);
    void settled.finally(() => pending.delete(settled));
  };
  return {
    add(owner, delta, at = Date.now()) {
      track(addUsage(db, owner, delta, at), Object.keys(delta).join(', '));
    },
    addToolCall(owner, call, at = Date.now()) {
      track(addToolCallUsage(db, owner, call, at), `tool call ${call.tool}`);
    },
    async flush() {
      while (pending.size > 0) await Promise.all(pending);
    },
  };
}

/**
 * Deletes usage rows of days more than `retentionDays` before the day of `now` (the day rows and
 * the tool calls by tool). Returns how many rows went.
 */
export async function sweepUsage(db: Db, retentionDays: number, now = Date.now()): Promise<number> {
  const oldest = utcDay(now - retentionDays * 24 * 60 * 60 * 1000);
  const days = await db.deleteFrom('usage_daily').where('day', '<', oldest).executeTakeFirst();
  const calls = await db.deleteFrom('usage_tool_calls').where('day', '<', oldest).executeTakeFirst();
  return Number(days.numDeletedRows) + Number(calls.numDeletedRows);
}
