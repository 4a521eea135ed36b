import type { Kysely } from 'kysely';

/**
 * The artifact lifecycle: `revoked_at` on every stored object (null while active; a revoked
 * artifact keeps its bytes and row, and every link to it fails until it is restored), and one
 * audit row per download of a published file. Audit rows name the artifact by storage path and
 * outlive it until retention removes them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('stored_files').addColumn('revoked_at', 'bigint').execute();
  await db.schema
    .createIndex('stored_files_owner_created')
    .on('stored_files')
    .columns(['tenant_id', 'agent_id', 'user_id', 'kind', 'created_at'])
    .execute();
  await db.schema
    .createTable('artifact_downloads')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('storage_path', 'text', (column) => column.notNull())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('downloaded_at', 'bigint', (column) => column.notNull())
    .addColumn('client_ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('status', 'integer', (column) => column.notNull())
    .addColumn('bytes', 'bigint')
    .execute();
  await db.schema
    .createIndex('artifact_downloads_path')
    .on('artifact_downloads')
    .columns(['storage_path', 'downloaded_at'])
    .execute();
  await db.schema.createIndex('artifact_downloads_time').on('artifact_downloads').column('downloaded_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('artifact_downloads').execute();
  await db.schema.dropIndex('stored_files_owner_created').execute();
  await db.schema.alterTable('stored_files').dropColumn('revoked_at').execute();
}
