import type { Kysely } from 'kysely';
import type { AgentsTable, DatabaseSchema, TenantsTable } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { createId } from '../ids.js';
import type { Page } from '../pagination/cursor.js';
import { type KeysetOrder, keysetPage, type PageRequest, toPage } from '../pagination/keyset.js';

type Db = Kysely<DatabaseSchema>;

export interface Tenant {
  id: string;
  name: string;
}

export interface Agent {
  id: string;
  tenantId: string;
  name: string;
}

/** A tenant as the admin API lists and reads it. */
export interface TenantRecord extends Tenant {
  /** ISO 8601. */
  createdAt: string;
}

/** An agent as the admin API lists and reads it. */
export interface AgentRecord extends Agent {
  /** ISO 8601. */
  createdAt: string;
}

/** Oldest first, the id breaking ties: new rows land on the last page and never shift earlier ones. */
const BY_CREATION: KeysetOrder = { at: 'created_at', key: 'id', direction: 'asc' };

const noSuchTenant = () => new ServiceError('NOT_FOUND', 'No such tenant.');
const noSuchAgent = () => new ServiceError('NOT_FOUND', 'No such agent.');

function toTenantRecord(row: TenantsTable): TenantRecord {
  return { id: row.id, name: row.name, createdAt: new Date(row.created_at).toISOString() };
}

function toAgentRecord(row: AgentsTable): AgentRecord {
  return { id: row.id, tenantId: row.tenant_id, name: row.name, createdAt: new Date(row.created_at).toISOString() };
}

const position = (row: { created_at: number; id: string }) => ({ at: row.created_at, key: row.id });

export async function createTenant(db: Db, name: string): Promise<Tenant> {
  const tenant = { id: createId('tenant'), name };
  await db
    .insertInto('tenants')
    .values({ ...tenant, created_at: Date.now() })
    .execute();
  return tenant;
}

/** Creates an agent inside a tenant. Throws 404 when the tenant does not exist. */
export async function createAgent(db: Db, tenantId: string, name: string): Promise<Agent> {
  const tenant = await db.selectFrom('tenants').select('id').where('id', '=', tenantId).executeTakeFirst();
  if (!tenant) throw noSuchTenant();
  const agent = { id: createId('agent'), tenantId, name };
  await db.insertInto('agents').values({ id: agent.id, tenant_id: tenantId, name, created_at: Date.now() }).execute();
  return agent;
}

export async function countTenants(db: Db): Promise<number> {
  const row = await db
    .selectFrom('tenants')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** One page of every tenant, oldest first. */
export async function listTenants(db: Db, page: PageRequest): Promise<Page<TenantRecord>> {
  const rows = await keysetPage(db.selectFrom('tenants').selectAll(), BY_CREATION, page).execute();
  return toPage(rows, page.limit, position, toTenantRecord);
}

/** A tenant by exact id. Throws 404 when there is none. */
export async function getTenant(db: Db, tenantId: string): Promise<TenantRecord> {
  const row = await db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirst();
  if (!row) throw noSuchTenant();
  return toTenantRecord(row);
}

/** Renames a tenant and returns it as now stored. Throws 404 when there is none. */
export async function renameTenant(db: Db, tenantId: string, name: string): Promise<TenantRecord> {
  const result = await db.updateTable('tenants').set({ name }).where('id', '=', tenantId).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw noSuchTenant();
  return getTenant(db, tenantId);
}

/** One page of a tenant's agents, oldest first. Throws 404 for an unknown tenant. */
export async function listAgents(db: Db, tenantId: string, page: PageRequest): Promise<Page<AgentRecord>> {
  await getTenant(db, tenantId);
  const query = db.selectFrom('agents').selectAll().where('tenant_id', '=', tenantId);
  const rows = await keysetPage(query, BY_CREATION, page).execute();
  return toPage(rows, page.limit, position, toAgentRecord);
}

/** An agent by exact id. Throws 404 when there is none. */
export async function getAgent(db: Db, agentId: string): Promise<AgentRecord> {
  const row = await db.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirst();
  if (!row) throw noSuchAgent();
  return toAgentRecord(row);
}

/** Renames an agent and returns it as now stored. Throws 404 when there is none. */
export async function renameAgent(db: Db, agentId: string, name: string): Promise<AgentRecord> {
  const result = await db.updateTable('agents').set({ name }).where('id', '=', agentId).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw noSuchAgent();
  return getAgent(db, agentId);
}
