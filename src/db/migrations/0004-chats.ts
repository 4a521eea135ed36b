import type { Kysely } from 'kysely';

/**
 * Chat histories, keyed by the exact owner and the client's chat id: the same chat id used by
 * another user (or agent, or tenant) is another chat. Messages are stored as the UI messages
 * the service produced (with canonical file fields), never as sent by a client.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('chats')
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('chat_id', 'text', (column) => column.notNull())
    .addColumn('messages', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('updated_at', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('chats_pk', ['tenant_id', 'agent_id', 'user_id', 'chat_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('chats').execute();
}
