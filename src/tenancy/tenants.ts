import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { createId } from '../ids.js';

export interface Tenant {
  id: string;
  name: string;
}

export interface Agent {
  id: string;
  tenantId: string;
  name: string;
}

export async function createTenant(db: Kysely<DatabaseSchema>, name: string): Promise<Tenant> {
  const tenant = { id: createId('tenant'), name };
  await db
    .insertInto('tenants')
    .values({ ...tenant, created_at: Date.now() })
    .execute();
  return tenant;
}

/** Creates an agent inside a tenant. Throws 404 when the tenant does not exist. */
export async function createAgent(db: Kysely<DatabaseSchema>, tenantId: string, name: string): Promise<Agent> {
  const tenant = await db.selectFrom('tenants').select('id').where('id', '=', tenantId).executeTakeFirst();
  if (!tenant) throw new ServiceError('NOT_FOUND', 'No such tenant.');
  const agent = { id: createId('agent'), tenantId, name };
  await db.insertInto('agents').values({ id: agent.id, tenant_id: tenantId, name, created_at: Date.now() }).execute();
  return agent;
}

export async function countTenants(db: Kysely<DatabaseSchema>): Promise<number> {
  const row = await db
    .selectFrom('tenants')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}
