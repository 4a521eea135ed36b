import { type Kysely, sql } from 'kysely';

const COUNTERS = [
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['reasoning_tokens', 'bigint'],
  ['cached_input_tokens', 'bigint'],
  ['turns', 'bigint'],
  ['turns_without_usage', 'bigint'],
  ['tool_calls', 'bigint'],
  ['sandbox_cpu_seconds', 'double precision'],
  ['sandbox_memory_gib_seconds', 'double precision'],
  ['disk_gib_hours', 'double precision'],
  ['artifact_bytes_published', 'bigint'],
  ['artifact_bytes_downloaded', 'bigint'],
  ['egress_bytes', 'bigint'],
] as const;

/**
 * Usage metering and limits. `usage_daily` holds one row per tenant, agent, user and UTC day
 * whose counters only grow (each write adds its own delta in one upsert, so replicas never count
 * twice); `usage_tool_calls` the same day's tool calls by tool and outcome. `usage_limits` holds
 * the limits of a tenant or an agent (`scope` = `tenant` | `agent`; null = unlimited).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  let daily = db.schema
    .createTable('usage_daily')
    .addColumn('tenant_id', 'text', (column) => column.notNull())
    .addColumn('agent_id', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('day', 'text', (column) => column.notNull());
  for (const [name, type] of COUNTERS) {
    daily = daily.addColumn(name, sql.raw(type), (column) => column.notNull().defaultTo(0));
  }
  await daily.addPrimaryKeyConstraint('usage_daily_key', ['tenant_id', 'day', 'agent_id', 'user_id']).execute();
  await db.schema.createIndex('usage_daily_day').on('usage_daily').columns(['day']).execute();
  await db.schema
    .createTable('usage_tool_calls')
    .addColumn('tenant_id', 'text', (column) => column.notNull())
    .addColumn('agent_id', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('day', 'text', (column) => column.notNull())
    .addColumn('tool', 'text', (column) => column.notNull())
    .addColumn('outcome', 'text', (column) => column.notNull())
    .addColumn('calls', 'bigint', (column) => column.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('usage_tool_calls_key', ['tenant_id', 'day', 'agent_id', 'user_id', 'tool', 'outcome'])
    .execute();
  await db.schema.createIndex('usage_tool_calls_day').on('usage_tool_calls').columns(['day']).execute();
  await db.schema
    .createTable('usage_limits')
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('scope_id', 'text', (column) => column.notNull())
    .addColumn('tokens_per_day', 'bigint')
    .addColumn('tokens_per_month', 'bigint')
    .addColumn('sandbox_cpu_seconds_per_day', 'bigint')
    .addColumn('storage_bytes', 'bigint')
    .addColumn('updated_at', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('usage_limits_key', ['scope', 'scope_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('usage_limits').execute();
  await db.schema.dropTable('usage_tool_calls').execute();
  await db.schema.dropTable('usage_daily').execute();
}
