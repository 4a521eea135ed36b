import { type Kysely, sql } from 'kysely';

/**
 * Resumable answers: one row per answer while it runs and for a minute after it is stored, and
 * its chunk log in batches (one row per flush, the chunks' JSON joined by newlines). A chat has at
 * most one running answer (the partial unique index), which is what makes a turn run once on any
 * replica. `space` scopes the key as the chat store does (`tenant/agent` in the service).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('chat_answers')
    .addColumn('answer_id', 'text', (column) => column.primaryKey())
    .addColumn('space', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('chat_id', 'text', (column) => column.notNull())
    .addColumn('user_message_id', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('owner', 'text', (column) => column.notNull())
    .addColumn('lease_until', 'bigint', (column) => column.notNull())
    .addColumn('stop_requested', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('reader_seen_at', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('overflow', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('started_at', 'bigint', (column) => column.notNull())
    .addColumn('finished_at', 'bigint')
    .execute();
  await sql`create unique index chat_answers_running on chat_answers (space, user_id, chat_id) where status = 'running'`.execute(
    db,
  );
  await db.schema
    .createIndex('chat_answers_chat')
    .on('chat_answers')
    .columns(['space', 'user_id', 'chat_id', 'started_at'])
    .execute();
  await db.schema.createIndex('chat_answers_lease').on('chat_answers').columns(['status', 'lease_until']).execute();
  await db.schema
    .createTable('chat_answer_chunks')
    .addColumn('answer_id', 'text', (column) => column.notNull())
    .addColumn('first_seq', 'integer', (column) => column.notNull())
    .addColumn('count', 'integer', (column) => column.notNull())
    .addColumn('data', 'text', (column) => column.notNull())
    .addPrimaryKeyConstraint('chat_answer_chunks_pk', ['answer_id', 'first_seq'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('chat_answer_chunks').execute();
  await db.schema.dropTable('chat_answers').execute();
}
