import { type Kysely, sql } from 'kysely';

const TOKEN_COLUMNS = [
  'id',
  'tenant_id',
  'agent_id',
  'user_id',
  'api_key_id',
  'token_hash',
  'audience',
  'permissions',
  'tools',
  'expires_at',
  'revoked_at',
  'created_at',
];

/**
 * Web console sign-ins, kept in the database so every replica knows them (the cookie holds a
 * secret of which only the SHA-256 is stored), and sandbox tokens minted for a console session's
 * preview chat: such a token names the session instead of an agent key, and signing out (or the
 * session's expiry) ends it. SQLite cannot drop a NOT NULL constraint, so `sandbox_tokens` is
 * rebuilt with its rows (on both databases, one code path).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('secret_hash', 'text', (column) => column.notNull().unique())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('console_sessions_expiry').on('console_sessions').column('expires_at').execute();

  await db.schema
    .createTable('sandbox_tokens_next')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('api_key_id', 'text', (column) => column.references('api_keys.id').onDelete('cascade'))
    .addColumn('console_session_id', 'text', (column) => column.references('console_sessions.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('audience', 'text', (column) => column.notNull())
    .addColumn('permissions', 'text', (column) => column.notNull())
    .addColumn('tools', 'text')
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addCheckConstraint('sandbox_tokens_one_issuer', sql`(api_key_id is null) <> (console_session_id is null)`)
    .execute();
  const columns = sql.join(TOKEN_COLUMNS.map((name) => sql.ref(name)));
  await sql`insert into sandbox_tokens_next (${columns}) select ${columns} from sandbox_tokens`.execute(db);
  await db.schema.dropTable('sandbox_tokens').execute();
  await db.schema.alterTable('sandbox_tokens_next').renameTo('sandbox_tokens').execute();
  await createTokenIndexes(db);
  await db.schema
    .createIndex('sandbox_tokens_console_session')
    .on('sandbox_tokens')
    .column('console_session_id')
    .execute();
}

async function createTokenIndexes(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('sandbox_tokens_owner')
    .on('sandbox_tokens')
    .columns(['tenant_id', 'agent_id', 'user_id'])
    .execute();
  await db.schema.createIndex('sandbox_tokens_api_key').on('sandbox_tokens').column('api_key_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Console-issued tokens have no agent key to keep: they go with their sessions.
  await db.schema
    .createTable('sandbox_tokens_previous')
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
  const columns = sql.join(TOKEN_COLUMNS.map((name) => sql.ref(name)));
  await sql`insert into sandbox_tokens_previous (${columns}) select ${columns} from sandbox_tokens where api_key_id is not null`.execute(
    db,
  );
  await db.schema.dropTable('sandbox_tokens').execute();
  await db.schema.alterTable('sandbox_tokens_previous').renameTo('sandbox_tokens').execute();
  await createTokenIndexes(db);
  await db.schema.dropTable('console_sessions').execute();
}
