import type { Kysely } from 'kysely';
import type { DatabaseSchema, StoredFilesTable } from '../db/schema.js';
import type { StoredFileKind } from '../storage/storage-path.js';
import type { UploadMediaType } from './media-types.js';

/** Who owns a stored file: the key's tenant and agent plus the verified user. */
export interface FileOwner {
  tenantId: string;
  agentId: string;
  userId: string;
}

/** The canonical record of a stored object, written only after its bytes are durable. */
export interface StoredFile {
  storagePath: string;
  kind: StoredFileKind;
  filename: string;
  mediaType: UploadMediaType;
  size: number;
  sha256: string;
  createdAt: number;
  /** Set while a published artifact is revoked: every link to it fails until it is restored. */
  revokedAt?: number;
}

type Db = Kysely<DatabaseSchema>;

/** The domain record of a `stored_files` row. */
export function toStoredFile(row: StoredFilesTable): StoredFile {
  return {
    storagePath: row.storage_path,
    kind: row.kind as StoredFileKind,
    filename: row.filename,
    mediaType: row.media_type as UploadMediaType,
    size: row.size,
    sha256: row.sha256,
    createdAt: row.created_at,
    ...(row.revoked_at === null ? {} : { revokedAt: row.revoked_at }),
  };
}

export async function registerStoredFile(db: Db, owner: FileOwner, file: StoredFile): Promise<void> {
  await db
    .insertInto('stored_files')
    .values({
      storage_path: file.storagePath,
      tenant_id: owner.tenantId,
      agent_id: owner.agentId,
      user_id: owner.userId,
      kind: file.kind,
      filename: file.filename,
      media_type: file.mediaType,
      size: file.size,
      sha256: file.sha256,
      created_at: file.createdAt,
    })
    .execute();
}

/**
 * The records among `storagePaths` that belong to exactly this owner, revoked ones included (for
 * delete, which destroys revoked artifacts too). A path owned by anyone else is simply absent.
 */
export async function findOwnedFilesAnyState(
  db: Db,
  owner: FileOwner,
  storagePaths: readonly string[],
): Promise<StoredFile[]> {
  if (storagePaths.length === 0) return [];
  const rows = await db
    .selectFrom('stored_files')
    .selectAll()
    .where('storage_path', 'in', [...new Set(storagePaths)])
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .execute();
  return rows.map(toStoredFile);
}

/**
 * The usable records among `storagePaths` that belong to exactly this owner. A path owned by
 * anyone else, or a revoked artifact, is simply absent from the result: unowned, revoked and
 * missing look the same to every caller (links, history, the model's attachments, imports).
 */
export async function findOwnedFiles(db: Db, owner: FileOwner, storagePaths: readonly string[]): Promise<StoredFile[]> {
  return (await findOwnedFilesAnyState(db, owner, storagePaths)).filter((file) => file.revokedAt === undefined);
}

export async function findOwnedFile(db: Db, owner: FileOwner, storagePath: string): Promise<StoredFile | undefined> {
  return (await findOwnedFiles(db, owner, [storagePath]))[0];
}

export async function deleteStoredFileRecord(db: Db, owner: FileOwner, storagePath: string): Promise<void> {
  await db
    .deleteFrom('stored_files')
    .where('storage_path', '=', storagePath)
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .execute();
}
