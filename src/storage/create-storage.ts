import type { Config } from '../config.js';
import { createDownloadSigner, type DownloadSigner } from './download-signer.js';
import type { FileStorage, LocalDownloads, StorageSetup } from './file-storage.js';
import { createFsStorage } from './fs-storage.js';
import { createS3Storage } from './s3-storage.js';
import { loadOrCreateSigningSecret } from './signing-secret.js';

/** How long the presigned bucket URL behind an artifact's redirect lives: the revocation window. */
export const ARTIFACT_REDIRECT_SECONDS = 60;

const ARTIFACT_PREFIX = 'artifacts/';

/**
 * S3 storage whose artifact URLs are the service's own signed `GET /v1/files/artifacts/…` (the
 * route checks the registry and redirects to a presigned URL living ≤ 60 s), so no long-lived
 * bucket URL of a published file is ever handed out. Uploads keep their presigned URLs.
 */
function routeArtifactsThroughService(
  bucket: FileStorage,
  signer: DownloadSigner,
): { storage: FileStorage; localDownloads: LocalDownloads } {
  const storage: FileStorage = {
    ...bucket,
    kind: bucket.kind,
    async signDownloadUrl(key, options) {
      return key.startsWith(ARTIFACT_PREFIX) ? signer.sign(key, options) : bucket.signDownloadUrl(key, options);
    },
  };
  const localDownloads: LocalDownloads = {
    routePrefix: signer.routePrefix,
    kinds: ['artifact'],
    verify: (storagePath, query) => signer.verify(storagePath, query),
    async deliver(storagePath, link) {
      const location = await bucket.signDownloadUrl(storagePath, {
        filename: link.filename,
        mediaType: link.mediaType,
        expiresInSeconds: ARTIFACT_REDIRECT_SECONDS,
      });
      return { kind: 'redirect', location };
    },
  };
  return { storage, localDownloads };
}

/**
 * The storage the operator configured: `s3` (credentials from the standard AWS chain) or the
 * embedded `fs` default, each with the service's signed-download endpoint. Both sign with
 * `MORDN_SIGNING_SECRET` or, without it, with a secret kept in the data directory.
 *
 * @example
 * const { storage, localDownloads } = await createStorage(config);
 * if (localDownloads) registerFileRoutes(app, localDownloads);
 */
export async function createStorage(config: Config): Promise<StorageSetup> {
  const urlTtlSeconds = config.downloadUrlTtlSeconds;
  const signingSecret = config.signingSecret ?? (await loadOrCreateSigningSecret(config.dataDir));
  if (config.storage.kind === 's3') {
    const { bucket, region, endpoint, publicEndpoint, forcePathStyle, timeoutMs, checksums } = config.storage;
    const s3 = createS3Storage({
      bucket,
      region,
      ...(endpoint === undefined ? {} : { endpoint }),
      ...(publicEndpoint === undefined ? {} : { publicEndpoint }),
      forcePathStyle,
      timeoutMs,
      checksums,
      urlTtlSeconds,
    });
    return {
      ...routeArtifactsThroughService(
        s3,
        createDownloadSigner({ publicUrl: config.publicUrl, signingSecret, urlTtlSeconds }),
      ),
      signingSecret,
    };
  }
  return {
    ...createFsStorage({ dataDir: config.dataDir, publicUrl: config.publicUrl, signingSecret, urlTtlSeconds }),
    signingSecret,
  };
}
