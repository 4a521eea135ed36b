import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Lifecycle } from './lifecycle.js';
import type { Logger } from './logger.js';
import type { HttpMetrics } from './metrics.js';
import type { ReadinessCheck } from './readiness.js';
import type { SandboxBackend } from './sandbox/backend.js';
import type { EgressProxy } from './sandbox/egress/egress-proxy.js';
import type { ToolAuthorizer } from './sandbox/execution-policy.js';
import type { FileStorage, LocalDownloads } from './storage/file-storage.js';

/** The sandbox backend with its cached readiness and the operator's custom authorization hook. */
export interface SandboxRuntime {
  backend: SandboxBackend;
  /** Cached readiness (see `createCachedProbe`): never provisions anything. */
  isReady(): Promise<boolean>;
  /** Why the backend is not ready, when known (shown by `/readyz`: host capabilities, never secrets). */
  problem?(): string | undefined;
  /** Runs before every tool call, after the allow-list; a throw or `false` denies (fail closed). */
  authorize?: ToolAuthorizer;
  /** The policy proxy, every sandbox's only way out (see `createEgressProxy`). */
  egress?: EgressProxy;
}

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
  /** Extra readiness checks besides the database (storage, sandbox backend). */
  readinessChecks?: ReadinessCheck[];
}
