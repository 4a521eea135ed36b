import type { Kysely } from 'kysely';

/**
 * Sandbox egress: one row per decision of the policy proxy (identical refusals within seconds of
 * each other share a row and its `count`), and the bytes each workspace moved per UTC day, which
 * every replica adds to so the daily cap holds across them. Rows name tenant, agent and user
 * without foreign keys: the log outlives a deleted agent, and a user's erasure removes theirs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('egress_log')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('at', 'bigint', (column) => column.notNull())
    .addColumn('tenant_id', 'text', (column) => column.notNull())
    .addColumn('agent_id', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('workspace_id', 'text', (column) => column.notNull())
    .addColumn('host', 'text', (column) => column.notNull())
    .addColumn('port', 'integer', (column) => column.notNull())
    .addColumn('address', 'text')
    .addColumn('decision', 'text', (column) => column.notNull())
    .addColumn('reason', 'text')
    .addColumn('bytes_up', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('bytes_down', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('duration_ms', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('count', 'integer', (column) => column.notNull().defaultTo(1))
    .execute();
  await db.schema.createIndex('egress_log_tenant_time').on('egress_log').columns(['tenant_id', 'at', 'id']).execute();
  await db.schema.createIndex('egress_log_time').on('egress_log').column('at').execute();
  await db.schema.createIndex('egress_log_owner').on('egress_log').columns(['agent_id', 'user_id']).execute();
  await db.schema
    .createTable('egress_usage')
    .addColumn('workspace_id', 'text', (column) => column.notNull())
    .addColumn('day', 'text', (column) => column.notNull())
    .addColumn('bytes', 'bigint', (column) => column.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('egress_usage_key', ['workspace_id', 'day'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('egress_usage').execute();
  await db.schema.dropTable('egress_log').execute();
}
