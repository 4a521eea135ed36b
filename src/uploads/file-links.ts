import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { FileStorage } from '../storage/file-storage.js';
import {
  deleteStoredFileRecord,
  type FileOwner,
  findOwnedFiles,
  findOwnedFilesAnyState,
  type StoredFile,
} from './file-registry.js';

export interface FileLinkDependencies {
  db: Kysely<DatabaseSchema>;
  storage: FileStorage;
  logger: Logger;
}

/** The canonical description of a stored file, as chat messages and tools carry it. */
export interface FileDescriptor {
  type: 'file';
  url: string;
  storagePath: string;
  filename: string;
  mediaType: string;
  size: number;
}

export type ResignResult =
  | { storagePath: string; url: string; file?: FileDescriptor }
  | { storagePath: string; error: { status: 404; code: 'NOT_FOUND' } };

/** The one answer for a path that is missing, revoked or owned by someone else. */
export const FILE_NOT_FOUND_MESSAGE = 'No such file. It may have been deleted; upload it again.';

async function sign(storage: FileStorage, file: StoredFile): Promise<{ url: string; file?: FileDescriptor }> {
  const url = await storage.signDownloadUrl(file.storagePath, { filename: file.filename, mediaType: file.mediaType });
  if (file.kind !== 'artifact') return { url };
  // Values come from the registry, never from whoever asked.
  return {
    url,
    file: {
      type: 'file',
      url,
      storagePath: file.storagePath,
      filename: file.filename,
      mediaType: file.mediaType,
      size: file.size,
    },
  };
}

/**
 * Fresh download URLs for storage paths owned by exactly this `(tenant, agent, user)`, in the order
 * asked. A path that is missing, deleted, revoked or owned by anyone else yields the same NOT_FOUND
 * entry (so chat history shows a revoked artifact as unavailable); artifacts also carry their
 * canonical file record.
 */
export async function resignFiles(
  deps: FileLinkDependencies,
  owner: FileOwner,
  storagePaths: readonly string[],
): Promise<ResignResult[]> {
  const owned = new Map((await findOwnedFiles(deps.db, owner, storagePaths)).map((file) => [file.storagePath, file]));
  return Promise.all(
    storagePaths.map(async (storagePath): Promise<ResignResult> => {
      const file = owned.get(storagePath);
      if (!file) return { storagePath, error: { status: 404, code: 'NOT_FOUND' } };
      return { storagePath, ...(await sign(deps.storage, file)) };
    }),
  );
}

/** Single-path form of `resignFiles`; throws the uniform 404 for anything not owned. */
export async function resignFile(
  deps: FileLinkDependencies,
  owner: FileOwner,
  storagePath: string,
): Promise<{ url: string; file?: FileDescriptor }> {
  const [result] = await resignFiles(deps, owner, [storagePath]);
  if (!result || 'error' in result) throw new ServiceError('NOT_FOUND', FILE_NOT_FOUND_MESSAGE);
  return result.file ? { url: result.url, file: result.file } : { url: result.url };
}

/**
 * Deletes owned files, revoked artifacts too: the object first, then its row. When storage
 * refuses, the row stays so the caller can retry, and the request fails. Paths that are already gone (or not the caller's) are
 * skipped, so repeating a delete is harmless.
 */
export async function deleteFiles(
  deps: FileLinkDependencies,
  owner: FileOwner,
  storagePaths: readonly string[],
  requestId: string,
): Promise<void> {
  const owned = await findOwnedFilesAnyState(deps.db, owner, storagePaths);
  let failed = 0;
  for (const file of owned) {
    try {
      await deps.storage.delete(file.storagePath);
    } catch (error) {
      failed += 1;
      deps.logger.error({ requestId, storagePath: file.storagePath, err: error }, 'storage delete failed');
      continue;
    }
    await deleteStoredFileRecord(deps.db, owner, file.storagePath);
  }
  if (failed > 0) {
    throw new ServiceError(
      'STORAGE_UNAVAILABLE',
      `${failed} of ${owned.length} files could not be deleted from storage; their records are kept, retry the request.`,
    );
  }
}
