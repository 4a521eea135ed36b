import type { Config } from '../config.js';
import type { StorageSetup } from './file-storage.js';
import { createFsStorage } from './fs-storage.js';
import { createS3Storage } from './s3-storage.js';
import { loadOrCreateSigningSecret } from './signing-secret.js';

/**
 * The storage the operator configured: `s3` (credentials from the standard AWS chain) or the
 * embedded `fs` default with its signed-download endpoint. `fs` signs with `MORDN_SIGNING_SECRET`
 * or, without it, with a secret kept in the data directory.
 *
 * @example
 * const { storage, localDownloads } = await createStorage(config);
 * if (localDownloads) registerFileRoutes(app, localDownloads);
 */
export async function createStorage(config: Config): Promise<StorageSetup> {
  const urlTtlSeconds = config.downloadUrlTtlSeconds;
  if (config.storage.kind === 's3') {
    const { bucket, region, endpoint, publicEndpoint, forcePathStyle, timeoutMs, checksums } = config.storage;
    return {
      storage: createS3Storage({
        bucket,
        region,
        ...(endpoint === undefined ? {} : { endpoint }),
        ...(publicEndpoint === undefined ? {} : { publicEndpoint }),
        forcePathStyle,
        timeoutMs,
        checksums,
        urlTtlSeconds,
      }),
    };
  }
  const signingSecret = config.signingSecret ?? (await loadOrCreateSigningSecret(config.dataDir));
  return createFsStorage({ dataDir: config.dataDir, publicUrl: config.publicUrl, signingSecret, urlTtlSeconds });
}
