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

  await rebuildTokenTable(db, { consoleSessions: true });
  await db.schema
    .createIndex('sandbox_tokens_console_session')
    .on('sandbox_tokens')
    .column('console_session_id')
    .execute();
}

/**
 * `sandbox_tokens` under another name: with `consoleSessions`, a token names either an agent key
 * or a console session (exactly one); without, the agent key as before this migration.
 */
async function createTokenTable(db: Kysely<unknown>, name: string, options: { consoleSessions: boolean }) {
  let table = db.schema
    .createTable(name)
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('tenant_id', 'text', (column) => column.notNull().references('tenants.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (column) => column.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull())
    .addColumn('api_key_id', 'text', (column) => {
      const key = column.references('api_keys.id').onDelete('cascade');
      return options.consoleSessions ? key : key.notNull();
    });
  if (options.consoleSessions) {
    table = table.addColumn('console_session_id', 'text', (column) =>
      column.references('console_sessions.id').onDelete('cascade'),
    );
  }
  table = table
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('audience', 'text', (column) => column.notNull())
    .addColumn('permissions', 'text', (column) => column.notNull())
    .addColumn('tools', 'text')
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('created_at', 'bigint', (column) => column.notNull());
  if (options.consoleSessions) {
    table = table.addCheckConstraint(
      'sandbox_tokens_one_issuer',
      sql`(api_key_id is null) <> (console_session_id is null)`,
    );
  }
  await table.execute();
}

/** Replaces `sandbox_tokens` by a copy of the other shape, rows included (tokens of an agent key only, going down). */
async function rebuildTokenTable(db: Kysely<unknown>, options: { consoleSessions: boolean }): Promise<void> {
  const rebuilt = 'sandbox_tokens_rebuilt';
  await createTokenTable(db, rebuilt, options);
  const columns = sql.join(TOKEN_COLUMNS.map((name) => sql.ref(name)));
  const kept = options.consoleSessions ? sql`` : sql` where api_key_id is not null`;
  await sql`insert into ${sql.table(rebuilt)} (${columns}) select ${columns} from sandbox_tokens${kept}`.execute(db);
  await db.schema.dropTable('sandbox_tokens').execute();
  await db.schema.alterTable(rebuilt).renameTo('sandbox_tokens').execute();
  await createTokenIndexes(db);
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
  await rebuildTokenTable(db, { consoleSessions: false });
  await db.schema.dropTable('console_sessions').execute();
}
