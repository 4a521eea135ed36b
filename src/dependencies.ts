import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Lifecycle } from './lifecycle.js';
import type { Logger } from './logger.js';
import type { HttpMetrics } from './metrics.js';
import type { ReadinessCheck } from './readiness.js';
import type { FileStorage, LocalDownloads } from './storage/file-storage.js';

/**
 * Everything the HTTP app needs, built by `src/main.ts` (or by a test with temporary parts) and
 * passed to `createApp`. Nothing below the app reaches for globals or environment variables.
 */
export interface AppDependencies {
  config: Config;
  database: Database;
  logger: Logger;
  metrics: HttpMetrics;
  lifecycle: Lifecycle;
  /** Private storage for uploads and artifacts. */
  storage: FileStorage;
  /** The signed-download endpoint for storage without URLs of its own (`fs`). */
  localDownloads?: LocalDownloads;
  /** Cached readiness of the sandbox backend, for the managed-sandbox gate. */
  sandboxReadiness?: () => Promise<boolean>;
  /** Extra readiness checks besides the database (storage, sandbox backend). */
  readinessChecks?: ReadinessCheck[];
}
