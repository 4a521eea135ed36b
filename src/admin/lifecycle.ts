import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { deleteLimits } from '../usage/limits.js';
import { ERASABLE_KINDS, type ErasureCounts, type ErasureDependencies, eraseUserData, isEmpty } from './erasure.js';

type Db = Kysely<DatabaseSchema>;

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

export interface DeleteOptions {
  /** Revoke active keys instead of refusing (`?force=true`). */
  force: boolean;
}

interface AgentRef {
  id: string;
  tenantId: string;
}

/** Whose keys a delete concerns: one agent's, or those of every agent of a tenant. */
interface KeyScope {
  column: 'agent_id' | 'tenant_id';
  id: string;
  /** Who holds them, as the refusal names it. */
  holder: string;
}

/**
 * Refuses a delete while keys are active (409 `ACTIVE_KEYS`), or with `force` revokes them first,
 * so nothing new arrives through them while the data goes.
 */
async function settleActiveKeys(db: Db, scope: KeyScope, force: boolean): Promise<void> {
  const { count } = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where(scope.column, '=', scope.id)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  const active = Number(count);
  if (active === 0) return;
  if (!force) {
    const them = active === 1 ? 'it' : 'them';
    throw new ServiceError(
      'ACTIVE_KEYS',
      `${scope.holder} ${plural(active, 'active API key')}: revoke ${them} first, or repeat the delete with ?force=true to revoke ${them} and delete everything.`,
    );
  }
  await db
    .updateTable('api_keys')
    .set({ revoked_at: Date.now() })
    .where(scope.column, '=', scope.id)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Every user with erasable data (or download records) in the agent. */
async function agentUsers(db: Db, agent: AgentRef): Promise<string[]> {
  const users = new Set<string>();
  for (const table of ['stored_files', 'workspaces', 'chats', 'artifact_downloads', 'egress_log'] as const) {
    const rows = await db
      .selectFrom(table as 'chats')
      .select('user_id')
      .distinct()
      .where('agent_id', '=', agent.id)
      .execute();
    for (const row of rows) users.add(row.user_id);
  }
  return [...users].sort();
}

/** Why an agent is kept: what could not be erased, and that repeating the delete finishes it. */
function leftoverError(left: ErasureCounts): ServiceError {
  const files = left.uploads + left.artifacts;
  if (files > 0) {
    return new ServiceError(
      'STORAGE_UNAVAILABLE',
      `${plural(files, 'stored file')} could not be deleted from storage (their records are kept) and ${plural(left.workspaces, 'workspace')} not removed; the agent is kept, repeat the delete to finish.`,
    );
  }
  return new ServiceError(
    'MANAGED_SANDBOX_UNAVAILABLE',
    `${plural(left.workspaces, 'workspace')} could not be removed (the sandbox backend is off, failed, or a tool call is using it); the agent is kept, repeat the delete once sandboxes are available.`,
  );
}

/**
 * The rate-limit windows of the agent's users. Their keys are `sandbox-calls:` and the JSON array
 * `[tenant, agent, user]` (see `src/sandbox/tool-calls.ts`), so the agent's are those starting
 * with the array's first two entries.
 */
function agentRateLimitPrefix(agent: AgentRef): string {
  return `sandbox-calls:${JSON.stringify([agent.tenantId, agent.id]).slice(0, -1)},`;
}

/**
 * Erases every user of the agent with every kind included (the per-user erasure, one user at a
 * time), then, only when nothing is left, the agent's own rows. Throws (503, the agent kept) when
 * anything could not be erased, or (409) when new data arrived meanwhile: a retry finishes.
 */
async function eraseAgent(deps: ErasureDependencies, agent: AgentRef): Promise<void> {
  const left: ErasureCounts = { workspaces: 0, egressDecisions: 0, uploads: 0, artifacts: 0, chats: 0 };
  for (const userId of await agentUsers(deps.db, agent)) {
    const owner = { tenantId: agent.tenantId, agentId: agent.id, userId };
    const { remaining } = await eraseUserData(deps, owner, { dryRun: false, include: ERASABLE_KINDS });
    for (const kind of Object.keys(left) as Array<keyof ErasureCounts>) left[kind] += remaining[kind];
  }
  if (!isEmpty(left)) throw leftoverError(left);

  await deps.db.transaction().execute(async (transaction) => {
    // A request already under way when the keys were revoked may still have stored something.
    const lateFile = await transaction
      .selectFrom('stored_files')
      .select('storage_path')
      .where('agent_id', '=', agent.id)
      .executeTakeFirst();
    const lateWorkspace = await transaction
      .selectFrom('workspaces')
      .select('id')
      .where('agent_id', '=', agent.id)
      .executeTakeFirst();
    if (lateFile || lateWorkspace) {
      throw new ServiceError('CONFLICT', 'New data arrived for the agent while it was deleted; repeat the delete.');
    }
    const prefix = agentRateLimitPrefix(agent);
    await transaction
      .deleteFrom('rate_limit_windows')
      .where(sql<string>`substr(key, 1, ${prefix.length})`, '=', prefix)
      .execute();
    for (const table of ['chats', 'artifact_downloads', 'sandbox_tokens', 'agent_configs', 'api_keys'] as const) {
      await transaction
        .deleteFrom(table as 'chats')
        .where('agent_id', '=', agent.id)
        .execute();
    }
    // Its limits go; its metered usage stays until retention (what it cost is still true).
    await deleteLimits(transaction, 'agent', agent.id);
    await transaction.deleteFrom('agents').where('id', '=', agent.id).execute();
  });
}

/**
 * Deletes an agent and everything of it: revokes its keys (only with `force`; active keys refuse
 * the delete otherwise, 409 `ACTIVE_KEYS`), erases every user's workspace, uploads, artifacts
 * (bytes, rows, download records) and chats, then its sandbox tokens, configs, keys and the agent.
 * A failed step leaves the agent in place (with whatever was not erased yet) for a retry.
 *
 * @example
 * await deleteAgent(deps, 'agt_3f9c…', { force: true });
 */
export async function deleteAgent(deps: ErasureDependencies, agentId: string, options: DeleteOptions): Promise<void> {
  const row = await deps.db
    .selectFrom('agents')
    .select(['id', 'tenant_id'])
    .where('id', '=', agentId)
    .executeTakeFirst();
  if (!row) throw new ServiceError('NOT_FOUND', 'No such agent.');
  await settleActiveKeys(deps.db, { column: 'agent_id', id: agentId, holder: 'The agent has' }, options.force);
  await eraseAgent(deps, { id: row.id, tenantId: row.tenant_id });
}

/**
 * Deletes a tenant: like `deleteAgent` for each of its agents (active keys of any of them refuse
 * it without `force`), then the tenant. An agent that fails stops the delete with the tenant
 * and the remaining agents in place; agents already deleted stay deleted, and a retry finishes.
 */
export async function deleteTenant(deps: ErasureDependencies, tenantId: string, options: DeleteOptions): Promise<void> {
  const tenant = await deps.db.selectFrom('tenants').select('id').where('id', '=', tenantId).executeTakeFirst();
  if (!tenant) throw new ServiceError('NOT_FOUND', 'No such tenant.');
  await settleActiveKeys(
    deps.db,
    { column: 'tenant_id', id: tenantId, holder: "The tenant's agents have" },
    options.force,
  );
  const agents = await deps.db
    .selectFrom('agents')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .orderBy('id')
    .execute();
  for (const agent of agents) await eraseAgent(deps, { id: agent.id, tenantId });
  await deps.db.transaction().execute(async (transaction) => {
    // An agent created while the others were deleted would go with the tenant, its bytes left behind.
    const late = await transaction
      .selectFrom('agents')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    if (late)
      throw new ServiceError('CONFLICT', 'An agent was created in the tenant while it was deleted; repeat the delete.');
    await deleteLimits(transaction, 'tenant', tenantId);
    await transaction.deleteFrom('tenants').where('id', '=', tenantId).execute();
  });
}
