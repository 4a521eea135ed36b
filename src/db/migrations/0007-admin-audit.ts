import type { Kysely } from 'kysely';

/**
 * The operator's admin API: an append-only audit log of admin writes (no foreign keys, so a row
 * outlives the tenant or agent it names), when each API key was last used, one row per sandbox
 * tool call for per-tenant usage, and an index for listing an agent's workspaces.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('admin_audit')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('at', 'bigint', (column) => column.notNull())
    .addColumn('actor', 'text', (column) => column.notNull())
    .addColumn('method', 'text', (column) => column.notNull())
    .addColumn('route', 'text', (column) => column.notNull())
    .addColumn('target', 'text', (column) => column.notNull())
    .addColumn('request_id', 'text', (column) => column.notNull())
    .addColumn('status', 'integer', (column) => column.notNull())
    .addColumn('outcome', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('admin_audit_time').on('admin_audit').columns(['at', 'id']).execute();
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'bigint').execute();
  await db.schema
    .createTable('tool_calls')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('tool', 'text', (column) => column.notNull())
    .addColumn('started_at', 'bigint', (column) => column.notNull())
    .addColumn('duration_ms', 'bigint', (column) => column.notNull())
    .addColumn('outcome', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('tool_calls_tenant_time').on('tool_calls').columns(['tenant_id', 'started_at']).execute();
  await db.schema
    .createIndex('workspaces_agent_created')
    .on('workspaces')
    .columns(['agent_id', 'created_at', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('workspaces_agent_created').execute();
  await db.schema.dropTable('tool_calls').execute();
  await db.schema.alterTable('api_keys').dropColumn('last_used_at').execute();
  await db.schema.dropTable('admin_audit').execute();
}
