import type { Kysely } from 'kysely';
import type { Cidr } from '../config.js';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { HttpMetrics } from '../metrics.js';
import type { UsageSink } from '../usage/usage-types.js';
import { findArtifactOwner } from './artifacts.js';
import { recordDownload, sweepDownloadAudit } from './download-audit.js';
import { createClientAddressResolver } from './trusted-proxies.js';

/** Who is asking, as the socket and (behind trusted proxies only) `X-Forwarded-For` say. */
export interface DownloadClient {
  peerAddress: string | undefined;
  forwardedFor: string | undefined;
  userAgent: string | undefined;
  /** Whether the request downloads (GET) and is recorded; a HEAD is checked but not recorded. */
  recorded: boolean;
}

/** Records how an admitted download ended: its status and the bytes sent, where known. */
export type DownloadOutcome = (status: number, bytes: number | null) => void;

/**
 * The registry check in front of every artifact download: a link verifies only that the service
 * minted it; whether the file is still published is read from the registry on each request, so
 * a revocation takes effect on the next request on every replica.
 */
export interface ArtifactDownloadGuard {
  /**
   * Admits a verified artifact link: resolves with the function that records the download's
   * outcome, or throws the 404 `NOT_FOUND` of a deleted file for a missing or revoked artifact
   * (a revoked one's refused attempt is recorded too).
   */
  admit(storagePath: string, client: DownloadClient): Promise<DownloadOutcome>;
}

export interface ArtifactDownloadGuardOptions {
  db: Kysely<DatabaseSchema>;
  logger: Logger;
  metrics: HttpMetrics;
  trustedProxies: readonly Cidr[];
  /** Days download records are kept (0: forever); records past it are swept as new ones arrive. */
  retentionDays: number;
  now?: () => number;
  /** Where the bytes of each served download are metered (`artifactBytesDownloaded`). */
  usage?: UsageSink;
}

/** How often recording a download also sweeps records past retention (per process). */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** The guard of the artifact download route; see `ArtifactDownloadGuard`. */
export function createArtifactDownloadGuard(options: ArtifactDownloadGuardOptions): ArtifactDownloadGuard {
  const clientAddress = createClientAddressResolver(options.trustedProxies);
  const now = options.now ?? Date.now;
  let lastSweep = Number.NEGATIVE_INFINITY;
  const sweepNowAndThen = (at: number) => {
    if (at - lastSweep < SWEEP_INTERVAL_MS) return;
    lastSweep = at;
    sweepDownloadAudit(options.db, options.retentionDays, at).catch((error: unknown) =>
      options.logger.error({ err: error }, 'download audit sweep failed'),
    );
  };
  return {
    async admit(storagePath, client) {
      const owner = await findArtifactOwner(options.db, storagePath);
      if (!owner) throw new ServiceError('NOT_FOUND', 'The file no longer exists.');
      const at = now();
      const clientIp = clientAddress(client.peerAddress, client.forwardedFor);
      const outcome: DownloadOutcome = (status, bytes) => {
        if (!client.recorded) return;
        sweepNowAndThen(now());
        const { tenantId, agentId, userId } = owner;
        if (bytes) options.usage?.add({ tenantId, agentId, userId }, { artifactBytesDownloaded: bytes }, at);
        void recordDownload(options, {
          storagePath,
          owner: { tenantId, agentId, userId },
          at,
          clientIp,
          userAgent: client.userAgent ?? null,
          status,
          bytes,
        });
      };
      if (owner.revoked) {
        outcome(404, null);
        throw new ServiceError('NOT_FOUND', 'The file no longer exists.');
      }
      return outcome;
    },
  };
}
