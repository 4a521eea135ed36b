import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import type { Page } from '../pagination/cursor.js';
import { keysetPage, type PageRequest, toPage } from '../pagination/keyset.js';
import { retentionDeadline } from '../sandbox/tools/workspace-usage.js';

/** A user's workspace as the operator lists it, from what the database records (nothing measured). */
export interface AgentWorkspaceSummary {
  id: string;
  /** The owner, exactly as the integrator sent it. */
  userId: string;
  /** The sandbox backend that holds it (`bwrap`, `docker`…). */
  backend: string;
  /** Bytes as last measured by a tool call (0 until one measured it). */
  bytesUsed: number;
  /** Not recorded: counting files means walking each workspace, so a listing never does it. */
  fileCount: null;
  /** ISO 8601: the last tool call that used it. */
  lastUsedAt: string;
  /** ISO 8601 after which retention deletes it unless it is used again; null when retention is off. */
  deleteAfter: string | null;
}

/**
 * One page of an agent's workspaces, oldest first, read from their records alone (a listing
 * touches no filesystem). Throws 404 for an unknown agent.
 */
export async function listAgentWorkspaces(
  db: Kysely<DatabaseSchema>,
  agentId: string,
  page: PageRequest,
  options: { retentionDays: number },
): Promise<Page<AgentWorkspaceSummary>> {
  const agent = await db.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new ServiceError('NOT_FOUND', 'No such agent.');
  const query = db
    .selectFrom('workspaces')
    .select(['id', 'user_id', 'backend', 'bytes', 'created_at', 'last_used_at'])
    .where('agent_id', '=', agentId);
  const rows = await keysetPage(query, { at: 'created_at', key: 'id', direction: 'asc' }, page).execute();
  return toPage(
    rows,
    page.limit,
    (row) => ({ at: row.created_at, key: row.id }),
    (row) => ({
      id: row.id,
      userId: row.user_id,
      backend: row.backend,
      bytesUsed: Number(row.bytes),
      fileCount: null,
      lastUsedAt: new Date(row.last_used_at).toISOString(),
      deleteAfter: retentionDeadline(row.last_used_at, options.retentionDays),
    }),
  );
}
