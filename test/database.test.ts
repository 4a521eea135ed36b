import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, findActiveApiKey } from '../src/auth/api-keys.js';
import { type Database, migrateToLatest, openDatabase } from '../src/db/database.js';
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
    ]);
    await migrateToLatest(database.db, database.dialect);
    const second = await target.open();
    await second.close();
    const again = await sql<{ name: string }>`select name from kysely_migration`.execute(database.db);
    expect(again.rows).toHaveLength(7);
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

  it('refuses to open a PostgreSQL schema with an unsafe name', async () => {
    await expect(
      openDatabase({ kind: 'postgres', url: 'postgres://127.0.0.1:1/none' }, { schema: 'x; drop table tenants' }),
    ).rejects.toThrow(/Invalid PostgreSQL schema name/);
  });
});
