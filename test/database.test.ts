import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, findActiveApiKey } from '../src/auth/api-keys.js';
import { type Database, migrateToLatest, openDatabase } from '../src/db/database.js';
import { migrationProvider } from '../src/db/migrations/index.js';
import { createAgent, createTenant } from '../src/tenancy/tenants.js';
import { createTestDatabaseTarget, type TestDatabaseTarget, testDialect } from './support/database.js';

let target: TestDatabaseTarget;
let database: Database;

beforeAll(async () => {
  target = await createTestDatabaseTarget();
  database = await target.open();
});
afterAll(async () => {
  await database.close();
  await target.destroy();
});

describe(`database layer (${testDialect()})`, () => {
  it('uses the dialect this project runs on', () => {
    expect(database.dialect).toBe(testDialect());
  });

  it('records applied migrations and re-applies nothing on the next start', async () => {
    const applied = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(database.db);
    expect(applied.rows.map((row) => row.name)).toEqual([
      '0001-initial',
      '0002-stored-files',
      '0003-workspaces',
      '0004-chats',
      '0005-sandbox-tokens',
      '0006-artifact-lifecycle',
      '0007-admin-audit',
      '0008-console-sessions',
      '0009-sandbox-egress',
      '0010-chat-answers',
      '0011-usage',
      '0012-workspace-metering',
    ]);
    await migrateToLatest(database.db, database.dialect);
    const second = await target.open();
    await second.close();
    const again = await sql<{ name: string }>`select name from kysely_migration`.execute(database.db);
    expect(again.rows).toHaveLength(12);
  });

  it('reads epoch-millisecond bigints back as numbers', async () => {
    const before = Date.now();
    const tenant = await createTenant(database.db, 'Numbers');
    const row = await database.db
      .selectFrom('tenants')
      .selectAll()
      .where('id', '=', tenant.id)
      .executeTakeFirstOrThrow();
    expect(typeof row.created_at).toBe('number');
    expect(row.created_at).toBeGreaterThanOrEqual(before);
  });

  it('looks ids up exactly: case and prefixes never match', async () => {
    const tenant = await createTenant(database.db, 'Exact');
    for (const variant of [
      tenant.id.toUpperCase(),
      tenant.id.slice(0, -2),
      `${tenant.id}%`,
      `${tenant.id.slice(0, 8)}%`,
    ]) {
      const found = await database.db.selectFrom('tenants').select('id').where('id', '=', variant).execute();
      expect(found).toEqual([]);
    }
  });

  it('enforces foreign keys: an agent needs its tenant', async () => {
    await expect(
      database.db
        .insertInto('agents')
        .values({ id: 'agt_orphan', tenant_id: 'ten_missing', name: 'x', created_at: Date.now() })
        .execute(),
    ).rejects.toThrow();
  });

  it('stores keys hashed and finds them only by the whole key', async () => {
    const tenant = await createTenant(database.db, 'Keys');
    const agent = await createAgent(database.db, tenant.id, 'Agent');
    const issued = await createApiKey(database.db, agent.id, ['read']);
    expect(await findActiveApiKey(database.db, issued.key)).toMatchObject({ agentId: agent.id, permissions: ['read'] });
    expect(await findActiveApiKey(database.db, `${issued.key.slice(0, -1)}x`)).toBeUndefined();
  });

  it('keeps the admin audit log without foreign keys, and starts every key without a last use', async () => {
    const tenant = await createTenant(database.db, 'Audit');
    const agent = await createAgent(database.db, tenant.id, 'Agent');
    const issued = await createApiKey(database.db, agent.id, ['read']);
    const key = await database.db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', issued.id)
      .executeTakeFirstOrThrow();
    expect(key.last_used_at).toBeNull();
    // An audit row may name a tenant that no longer exists: it outlives what it names.
    const row = {
      id: 'aud_test',
      at: Date.now(),
      actor: 'admin:0123456789ab',
      method: 'DELETE',
      route: '/v1/admin/tenants/:tenantId',
      target: JSON.stringify({ tenantId: 'ten_gone' }),
      request_id: 'request-1',
      status: 204,
      outcome: 'ok',
    };
    await database.db.insertInto('admin_audit').values(row).execute();
    const stored = await database.db.selectFrom('admin_audit').selectAll().where('id', '=', 'aud_test').execute();
    expect(stored).toEqual([row]);
    expect(typeof stored[0]?.at).toBe('number');
  });

  it('keeps agent-key sandbox tokens through the console-session rebuild of their table, down and up', async () => {
    const tenant = await createTenant(database.db, 'Tokens');
    const agent = await createAgent(database.db, tenant.id, 'Agent');
    const key = await createApiKey(database.db, agent.id, ['read']);
    const token = {
      id: 'tok_migrated',
      tenant_id: tenant.id,
      agent_id: agent.id,
      user_id: 'user-1',
      api_key_id: key.id,
      token_hash: 'f'.repeat(64),
      audience: 'http://127.0.0.1/v1/sandbox/mcp',
      permissions: 'read',
      tools: null,
      expires_at: Date.now() + 60_000,
      revoked_at: null,
      created_at: Date.now(),
    };
    let schema: string | undefined;
    if (database.dialect === 'postgres') {
      schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(database.db)).rows[0]?.schema;
    }
    const migrator = new Migrator({
      db: database.db,
      provider: migrationProvider,
      ...(schema ? { migrationTableSchema: schema } : {}),
    });
    expect((await migrator.migrateDown()).error).toBeUndefined();
    await sql`insert into sandbox_tokens (id, tenant_id, agent_id, user_id, api_key_id, token_hash, audience, permissions, tools, expires_at, revoked_at, created_at) values (${token.id}, ${token.tenant_id}, ${token.agent_id}, ${token.user_id}, ${token.api_key_id}, ${token.token_hash}, ${token.audience}, ${token.permissions}, ${token.tools}, ${token.expires_at}, ${token.revoked_at}, ${token.created_at})`.execute(
      database.db,
    );
    await migrateToLatest(database.db, database.dialect);
    const rows = await database.db.selectFrom('sandbox_tokens').selectAll().where('id', '=', token.id).execute();
    expect(rows).toEqual([{ ...token, console_session_id: null }]);
    // A token names exactly one issuer: an agent key or a console session.
    await expect(
      database.db
        .insertInto('sandbox_tokens')
        .values({ ...token, id: 'tok_orphan', token_hash: 'e'.repeat(64), api_key_id: null, console_session_id: null })
        .execute(),
    ).rejects.toThrow();
    await database.db.deleteFrom('sandbox_tokens').where('id', '=', token.id).execute();
  });

  it.runIf(testDialect() === 'postgres')(
    'migrates while other schemas of the database are made, altered and dropped, and introspects only its own',
    async () => {
      // Another deployment (or test) changing its own schema meanwhile: Kysely's own introspector
      // reads every schema's columns and fails on one dropped mid-read.
      let churning = true;
      const churn = (async () => {
        const admin = await createTestDatabaseTarget();
        const other = await admin.open();
        try {
          for (let round = 0; churning; round += 1) {
            const name = `churn_${process.pid}_${round}`;
            await sql`create schema ${sql.id(name)}`.execute(other.db);
            await sql`create table ${sql.id(name, 'rows')} (id serial primary key, a int)`.execute(other.db);
            await sql`alter table ${sql.id(name, 'rows')} add column b bigserial`.execute(other.db);
            await sql`drop schema ${sql.id(name)} cascade`.execute(other.db);
          }
        } finally {
          await other.close();
          await admin.destroy();
        }
      })();
      try {
        for (let start = 0; start < 6; start += 1) {
          const fresh = await createTestDatabaseTarget();
          const opened = await fresh.open();
          await opened.close();
          await fresh.destroy();
        }
      } finally {
        churning = false;
        await churn;
      }
      const tables = await database.db.introspection.getTables({ withInternalKyselyTables: true });
      expect(new Set(tables.map((table) => table.schema))).toEqual(new Set([target.schema]));
      expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(['kysely_migration', 'tenants']));
    },
    60_000,
  );

  it('refuses to open a PostgreSQL schema with an unsafe name', async () => {
    await expect(
      openDatabase({ kind: 'postgres', url: 'postgres://127.0.0.1:1/none' }, { schema: 'x; drop table tenants' }),
    ).rejects.toThrow(/Invalid PostgreSQL schema name/);
  });
});
