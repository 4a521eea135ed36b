import type { Kysely } from 'kysely';

/**
 * Managed-sandbox state shared by every replica: one workspace per `(tenant, agent, user)` (the
 * unique key makes provisioning idempotent across processes), time-bounded leases that cap
 * concurrent calls per workspace, and fixed-window counters for per-user rate limits.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('backend', 'text', (column) => column.notNull())
    .addColumn('placement', 'text')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('last_used_at', 'bigint', (column) => column.notNull())
    .addColumn('bytes', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('lease_epoch', 'integer', (column) => column.notNull().defaultTo(0))
    .addUniqueConstraint('workspaces_owner', ['tenant_id', 'agent_id', 'user_id'])
    .execute();
  await db.schema.createIndex('workspaces_last_used').on('workspaces').column('last_used_at').execute();

  await db.schema
    .createTable('workspace_leases')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('workspace_id', 'text', (column) => column.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('workspace_leases_workspace').on('workspace_leases').column('workspace_id').execute();

  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('key', 'text', (column) => column.notNull())
    .addColumn('window_start', 'bigint', (column) => column.notNull())
    .addColumn('count', 'integer', (column) => column.notNull())
    .addPrimaryKeyConstraint('rate_limit_windows_pk', ['key', 'window_start'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['rate_limit_windows', 'workspace_leases', 'workspaces']) {
    await db.schema.dropTable(table).execute();
  }
}
