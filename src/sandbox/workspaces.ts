import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema, WorkspacesTable } from '../db/schema.js';
import { createId } from '../ids.js';
import type { FileOwner } from '../uploads/file-registry.js';

type Db = Kysely<DatabaseSchema>;

/** One user's persistent workspace within a tenant and agent, shared by all their chats. */
export interface Workspace {
  id: string;
  tenantId: string;
  agentId: string;
  userId: string;
  backend: string;
  placement: string | null;
  bytes: number;
  lastUsedAt: number;
}

function toWorkspace(
  row: Pick<WorkspacesTable, Exclude<(typeof COLUMNS)[number], 'bytes'>> & { bytes: number },
): Workspace {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    agentId: row.agent_id,
    userId: row.user_id,
    backend: row.backend,
    placement: row.placement,
    bytes: row.bytes,
    lastUsedAt: row.last_used_at,
  };
}

const COLUMNS = [
  'id',
  'tenant_id',
  'agent_id',
  'user_id',
  'backend',
  'placement',
  'created_at',
  'last_used_at',
  'bytes',
] as const;

/** The owner's workspace record, if one was ever provisioned. Exact match on all three ids. */
export async function findWorkspace(db: Db, owner: FileOwner): Promise<Workspace | undefined> {
  const row = await db
    .selectFrom('workspaces')
    .select(COLUMNS)
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .executeTakeFirst();
  return row ? toWorkspace(row) : undefined;
}

/**
 * The owner's workspace record, created on first use. The unique `(tenant, agent, user)` key
 * makes this safe to race: every replica that asks at once ends up with the same single row.
 */
export async function ensureWorkspaceRecord(db: Db, owner: FileOwner, backend: string): Promise<Workspace> {
  const existing = await findWorkspace(db, owner);
  if (existing) return existing;
  const now = Date.now();
  await db
    .insertInto('workspaces')
    .values({
      id: createId('workspace'),
      tenant_id: owner.tenantId,
      agent_id: owner.agentId,
      user_id: owner.userId,
      backend,
      placement: null,
      created_at: now,
      last_used_at: now,
    })
    .onConflict((conflict) => conflict.columns(['tenant_id', 'agent_id', 'user_id']).doNothing())
    .execute();
  const workspace = await findWorkspace(db, owner);
  if (!workspace) throw new Error('Workspace record vanished right after creation');
  return workspace;
}

export async function recordWorkspaceUse(
  db: Db,
  workspaceId: string,
  update: { placement?: string; bytes?: number } = {},
): Promise<void> {
  await db
    .updateTable('workspaces')
    .set({
      last_used_at: Date.now(),
      ...(update.placement === undefined ? {} : { placement: update.placement }),
      ...(update.bytes === undefined ? {} : { bytes: update.bytes }),
    })
    .where('id', '=', workspaceId)
    .execute();
}

/**
 * Takes one of `max` concurrent-call slots of a workspace for `ttlMs` (a crash cannot hold a slot
 * longer), or returns `undefined` when all are taken. The bump of `lease_epoch` locks the
 * workspace row first, so replicas deciding at the same moment take turns.
 */
export async function acquireWorkspaceLease(
  db: Db,
  workspaceId: string,
  options: { max: number; ttlMs: number },
): Promise<string | undefined> {
  return db.transaction().execute(async (transaction) => {
    const now = Date.now();
    await transaction
      .updateTable('workspaces')
      .set({ lease_epoch: sql`lease_epoch + 1` })
      .where('id', '=', workspaceId)
      .execute();
    await transaction
      .deleteFrom('workspace_leases')
      .where('workspace_id', '=', workspaceId)
      .where('expires_at', '<=', now)
      .execute();
    const { active } = await transaction
      .selectFrom('workspace_leases')
      .select((eb) => eb.fn.countAll<number | string>().as('active'))
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirstOrThrow();
    if (Number(active) >= options.max) return undefined;
    const id = createId('lease');
    await transaction
      .insertInto('workspace_leases')
      .values({ id, workspace_id: workspaceId, expires_at: now + options.ttlMs })
      .execute();
    return id;
  });
}

export async function releaseWorkspaceLease(db: Db, leaseId: string): Promise<void> {
  await db.deleteFrom('workspace_leases').where('id', '=', leaseId).execute();
}

/** Ends a call: gives its slot back and records the use, in one transaction. */
export async function finishWorkspaceCall(
  db: Db,
  workspaceId: string,
  leaseId: string,
  update: { placement?: string; bytes?: number } = {},
): Promise<void> {
  await db.transaction().execute(async (transaction) => {
    await releaseWorkspaceLease(transaction, leaseId);
    await recordWorkspaceUse(transaction, workspaceId, update);
  });
}

/** Workspaces unused since `before` (epoch ms), oldest first. */
export async function findIdleWorkspaces(db: Db, before: number, limit: number): Promise<Workspace[]> {
  const rows = await db
    .selectFrom('workspaces')
    .select(COLUMNS)
    .where('last_used_at', '<', before)
    .orderBy('last_used_at')
    .limit(limit)
    .execute();
  return rows.map(toWorkspace);
}

/** Deletes a workspace record, but only if it is still idle (a call may have just used it). */
export async function deleteIdleWorkspaceRecord(db: Db, workspaceId: string, before: number): Promise<boolean> {
  const result = await db
    .deleteFrom('workspaces')
    .where('id', '=', workspaceId)
    .where('last_used_at', '<', before)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
