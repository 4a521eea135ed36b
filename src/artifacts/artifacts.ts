import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { type CursorPosition, decodeCursor, encodeCursor, type Page } from '../pagination/cursor.js';
import { FILE_NOT_FOUND_MESSAGE } from '../uploads/file-links.js';
import { type FileOwner, type StoredFile, toStoredFile } from '../uploads/file-registry.js';

type Db = Kysely<DatabaseSchema>;

export type ArtifactState = 'active' | 'revoked';

/** A published file as its owner and the operator see it. */
export interface ArtifactSummary {
  storagePath: string;
  filename: string;
  mediaType: string;
  size: number;
  createdAt: string;
  state: ArtifactState;
  /** When it was revoked; null while active. */
  revokedAt: string | null;
  /** The owner's stored chats whose messages reference this storage path. */
  chatIds: string[];
}

const notFound = () => new ServiceError('NOT_FOUND', FILE_NOT_FOUND_MESSAGE);

function ownedArtifacts(db: Db, owner: FileOwner) {
  return db
    .selectFrom('stored_files')
    .selectAll()
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where('kind', '=', 'artifact');
}

/**
 * The chat ids of the owner's stored chats that mention each storage path. Messages are stored
 * as JSON text; storage paths are `artifacts/<32 hex>` (no LIKE wildcards), so a substring match
 * narrows the rows in SQL and an exact JSON-string check confirms each one.
 */
async function referencingChats(db: Db, owner: FileOwner, storagePaths: readonly string[]) {
  const references = new Map<string, string[]>(storagePaths.map((storagePath) => [storagePath, []]));
  if (storagePaths.length === 0) return references;
  const rows = await db
    .selectFrom('chats')
    .select(['chat_id', 'messages'])
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where((eb) => eb.or(storagePaths.map((storagePath) => eb('messages', 'like', `%${storagePath}%`))))
    .orderBy('chat_id')
    .execute();
  for (const row of rows) {
    for (const storagePath of storagePaths) {
      if (row.messages.includes(JSON.stringify(storagePath))) references.get(storagePath)?.push(row.chat_id);
    }
  }
  return references;
}

function summarize(file: StoredFile, chatIds: string[]): ArtifactSummary {
  return {
    storagePath: file.storagePath,
    filename: file.filename,
    mediaType: file.mediaType,
    size: file.size,
    createdAt: new Date(file.createdAt).toISOString(),
    state: file.revokedAt === undefined ? 'active' : 'revoked',
    revokedAt: file.revokedAt === undefined ? null : new Date(file.revokedAt).toISOString(),
    chatIds,
  };
}

async function summarizeAll(db: Db, owner: FileOwner, files: StoredFile[]): Promise<ArtifactSummary[]> {
  const chats = await referencingChats(
    db,
    owner,
    files.map((file) => file.storagePath),
  );
  return files.map((file) => summarize(file, chats.get(file.storagePath) ?? []));
}

/**
 * One page of the owner's published files, newest first (storage path breaking ties, so the order
 * is total and a cursor never skips or repeats an item), each with the chats that reference it.
 */
export async function listArtifacts(
  db: Db,
  owner: FileOwner,
  page: { limit: number; cursor?: string },
): Promise<Page<ArtifactSummary>> {
  const after: CursorPosition | undefined = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  let query = ownedArtifacts(db, owner);
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', after.at),
        eb.and([eb('created_at', '=', after.at), eb('storage_path', '<', after.key)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('storage_path', 'desc')
    .limit(page.limit + 1)
    .execute();
  const files = rows.slice(0, page.limit).map(toStoredFile);
  const last = files.at(-1);
  return {
    items: await summarizeAll(db, owner, files),
    nextCursor: rows.length > page.limit && last ? encodeCursor({ at: last.createdAt, key: last.storagePath }) : null,
  };
}

/** One of the owner's published files, revoked or not; the uniform 404 for missing and unowned. */
export async function getArtifact(db: Db, owner: FileOwner, storagePath: string): Promise<ArtifactSummary> {
  const row = await ownedArtifacts(db, owner).where('storage_path', '=', storagePath).executeTakeFirst();
  if (!row) throw notFound();
  const [summary] = await summarizeAll(db, owner, [toStoredFile(row)]);
  return summary as ArtifactSummary;
}

/**
 * Revokes (`revoked: true`) or restores one published file of the owner. Effective at once on
 * every replica: every download, re-sign and history lookup reads the row. Revoking a revoked
 * file keeps its first revocation time; restoring an active one changes nothing.
 */
export async function setArtifactRevoked(
  db: Db,
  owner: FileOwner,
  storagePath: string,
  revoked: boolean,
  now = Date.now(),
): Promise<ArtifactSummary> {
  const update = db
    .updateTable('stored_files')
    .where('storage_path', '=', storagePath)
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where('kind', '=', 'artifact');
  await (revoked
    ? update.set({ revoked_at: now }).where('revoked_at', 'is', null)
    : update.set({ revoked_at: null })
  ).execute();
  return getArtifact(db, owner, storagePath);
}

/** Revokes every active published file of one user of an agent; returns how many were revoked. */
export async function revokeAllArtifacts(db: Db, owner: FileOwner, now = Date.now()): Promise<number> {
  const result = await db
    .updateTable('stored_files')
    .set({ revoked_at: now })
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where('kind', '=', 'artifact')
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The owner of a published file (any state), for the download route; undefined when there is none. */
export async function findArtifactOwner(
  db: Db,
  storagePath: string,
): Promise<(FileOwner & { revoked: boolean }) | undefined> {
  const row = await db
    .selectFrom('stored_files')
    .select(['tenant_id', 'agent_id', 'user_id', 'revoked_at'])
    .where('storage_path', '=', storagePath)
    .where('kind', '=', 'artifact')
    .executeTakeFirst();
  if (!row) return undefined;
  return { tenantId: row.tenant_id, agentId: row.agent_id, userId: row.user_id, revoked: row.revoked_at !== null };
}

/** The tenant of an agent, for operator routes addressed by agent id; 404 for an unknown agent. */
export async function requireAgentTenant(db: Db, agentId: string): Promise<string> {
  const row = await db.selectFrom('agents').select('tenant_id').where('id', '=', agentId).executeTakeFirst();
  if (!row) throw new ServiceError('NOT_FOUND', 'No such agent.');
  return row.tenant_id;
}

/** The owner of a published file of an agent, for operator routes addressed by storage path. */
export async function requireAgentArtifactOwner(db: Db, agentId: string, storagePath: string): Promise<FileOwner> {
  const owner = await findArtifactOwner(db, storagePath);
  if (!owner || owner.agentId !== agentId) throw notFound();
  return owner;
}
