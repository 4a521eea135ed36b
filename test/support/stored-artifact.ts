import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Database } from '../../src/db/database.js';
import type { AppDependencies } from '../../src/dependencies.js';
import type { UploadMediaType } from '../../src/media-types.js';
import { createStoragePath } from '../../src/storage/storage-path.js';
import { type FileOwner, registerStoredFile } from '../../src/uploads/file-registry.js';

/**
 * An artifact as `sandbox_publish_file` leaves one, for tests where the tool is not the point:
 * durable bytes in the service's storage, then the registry row.
 */
export async function storeArtifact(
  service: { deps: Pick<AppDependencies, 'storage'>; database: Pick<Database, 'db'> },
  owner: FileOwner,
  bytes: Buffer,
  options: { filename: string; mediaType: UploadMediaType; createdAt?: number },
): Promise<{ storagePath: string; bytes: Buffer }> {
  const storagePath = createStoragePath('artifact');
  await service.deps.storage.put(storagePath, Readable.from([bytes]), {
    contentType: options.mediaType,
    size: bytes.length,
  });
  await registerStoredFile(service.database.db, owner, {
    storagePath,
    kind: 'artifact',
    filename: options.filename,
    mediaType: options.mediaType,
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    createdAt: options.createdAt ?? Date.now(),
  });
  return { storagePath, bytes };
}
