import type { Kysely } from 'kysely';

/** Tenants, agents, hashed API keys and draft/published agent configuration. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tenants')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('agents')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('agents_tenant_id').on('agents').column('tenant_id').execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (column) => column.notNull().unique())
    .addColumn('key_prefix', 'text', (column) => column.notNull())
    .addColumn('permissions', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_agent_id').on('api_keys').column('agent_id').execute();

  await db.schema
    .createTable('agent_configs')
    .addColumn('agent_id', 'text', (column) => column.primaryKey().references('agents.id').onDelete('cascade'))
    .addColumn('draft', 'text')
    .addColumn('draft_updated_at', 'bigint')
    .addColumn('published', 'text')
    .addColumn('published_at', 'bigint')
    .addColumn('published_version', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['agent_configs', 'api_keys', 'agents', 'tenants']) {
    await db.schema.dropTable(table).execute();
  }
}
