import { deleteFiles, type FileLinkDependencies, resignFiles } from '../uploads/file-links.js';
import type { FileOwner } from '../uploads/file-registry.js';
import type { AttachmentStorage } from './types.js';

/**
 * The service's own attachment storage for its chat handler: the registry and storage behind
 * `/v1/uploads`, called in-process with the same exact-owner checks.
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
  };
}
