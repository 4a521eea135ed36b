import type { UserHash } from './auth/user-hash.js';
import type { AnswerRuns } from './chat/answer-runs.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Lifecycle } from './lifecycle.js';
import type { Logger } from './logger.js';
import type { HttpMetrics } from './metrics.js';
import type { ReadinessCheck } from './readiness.js';
import type { SandboxRuntime } from './sandbox/sandbox-runtime.js';
import type { FileStorage, LocalDownloads } from './storage/file-storage.js';
import type { UsageRecorder } from './usage/usage-ledger.js';

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
  /** The service's own signed-download endpoint: every object under `fs`, published artifacts under `s3`. */
  localDownloads?: LocalDownloads;
  /** Managed sandboxes, present when the operator enables them. */
  sandbox?: SandboxRuntime;
  /**
   * The loopback origin this service is served on (`http://127.0.0.1:PORT`), set once it
   * listens: the service's own chat reaches its sandbox endpoint through it, like any host would.
   */
  selfBaseUrl?: string;
  /** This process's resumable answers, over the database's answer store. */
  answers: AnswerRuns;
  /**
   * Metered usage, written to the database per tenant, agent, user and day, and the limits read
   * from it; absent only where metering is turned off (a benchmark measuring its cost).
   */
  usage?: UsageRecorder;
  /** The keyed hash of user ids (erased users' usage rows, traces). */
  userHash: UserHash;
  /** Extra readiness checks besides the database (storage, sandbox backend). */
  readinessChecks?: ReadinessCheck[];
}
