import { readObject } from '../storage/read-object.js';
import { deleteFiles, type FileLinkDependencies, resignFiles } from '../uploads/file-links.js';
import { type FileOwner, findOwnedFiles } from '../uploads/file-registry.js';
import type { AttachmentStorage, StoredAttachment } from './types.js';

/**
 * The service's own attachment storage for its chat handler: the registry and storage behind
 * `/v1/uploads`, called in-process with the same exact-owner checks. `find` answers from the
 * registry (the canonical media type the bytes were detected as) and reads bytes from storage,
 * local disk or S3 alike, only for the files asked.
 */
export function createServiceAttachmentStorage(
  deps: FileLinkDependencies,
  agent: { tenantId: string; agentId: string },
  requestId: string,
): AttachmentStorage {
  const ownerOf = (userId: string): FileOwner => ({ ...agent, userId });
  return {
    async resign(owner, storagePaths) {
      const results = await resignFiles(deps, ownerOf(owner.userId), storagePaths);
      return new Map(results.map((result) => [result.storagePath, 'url' in result ? result.url : undefined]));
    },
    async delete(owner, storagePaths) {
      await deleteFiles(deps, ownerOf(owner.userId), storagePaths, requestId);
    },
    async find(owner, storagePaths) {
      const owned = await findOwnedFiles(deps.db, ownerOf(owner.userId), storagePaths);
      return new Map(
        owned.map((file): [string, StoredAttachment] => [
          file.storagePath,
          {
            mediaType: file.mediaType,
            filename: file.filename,
            size: file.size,
            read: () => readObject(deps.storage, file.storagePath, file.size),
          },
        ]),
      );
    },
  };
}
