import type { Kysely } from 'kysely';

/**
 * Per-user bearer tokens for `/v1/sandbox/mcp`, stored hashed like API keys. Each names the agent
 * key that minted it: the lookup joins that key, so revoking (or deleting) the key ends its
 * tokens on the next request on every replica.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sandbox_tokens')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('api_key_id', 'text', (column) => column.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('audience', 'text', (column) => column.notNull())
    .addColumn('permissions', 'text', (column) => column.notNull())
    .addColumn('tools', 'text')
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema
    .createIndex('sandbox_tokens_owner')
    .on('sandbox_tokens')
    .columns(['tenant_id', 'agent_id', 'user_id'])
    .execute();
  await db.schema.createIndex('sandbox_tokens_api_key').on('sandbox_tokens').column('api_key_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('sandbox_tokens').execute();
}
