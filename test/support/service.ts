import { Writable } from 'node:stream';
import { createApp, type MordnApp } from '../../src/app.js';
import { composeDependencies } from '../../src/compose.js';
import { type Config, loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import type { AppDependencies } from '../../src/dependencies.js';
import type { Lifecycle } from '../../src/lifecycle.js';
import { createLogger } from '../../src/logger.js';
import type { HttpMetrics } from '../../src/metrics.js';
import type { ResolveAll } from '../../src/sandbox/egress/destinations.js';
import type { ToolAuthorizer } from '../../src/sandbox/execution-policy.js';
import { type RunningServer, startServer } from '../../src/server.js';
import type { UsageSink } from '../../src/usage/usage-types.js';
import { createTestDatabase, type TestDatabaseTarget } from './database.js';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestService {
  url: string;
  app: MordnApp;
  config: Config;
  database: Database & { target: TestDatabaseTarget };
  metrics: HttpMetrics;
  lifecycle: Lifecycle;
  /** Everything the app was built from. */
  deps: AppDependencies;
  /** Every log line written so far, raw (as it would reach stdout). */
  logs: string[];
  /** Sends a request to the service over real HTTP. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export interface StartTestServiceOptions {
  /** Extra environment variables for `loadConfig` (data dir and database are set for you). */
  environment?: Record<string, string>;
  /** Register extra routes (probes for middleware tests) before the server starts. */
  extendApp?: (app: MordnApp, database: Database) => void;
  /** The sandbox backend's readiness, for the managed-sandbox gate. */
  sandboxReadiness?: () => Promise<boolean>;
  /** The execution policy's custom hook. */
  authorizeToolCall?: ToolAuthorizer;
  /** The resolver of the sandbox egress proxy (names the test maps to its own servers). */
  resolve?: ResolveAll;
  /** Where sandbox usage is recorded (none is metered without it). */
  usage?: UsageSink;
}

/**
 * The real app over real HTTP on 127.0.0.1, on a fresh isolated database (SQLite or PostgreSQL per
 * the vitest project), with its log captured.
 */
export async function startTestService(options: StartTestServiceOptions = {}): Promise<TestService> {
  const database = await createTestDatabase();
  // Listen first, so signed URLs can carry the real port; requests wait for the app below.
  let app: MordnApp | undefined;
  const server: RunningServer = await startServer({
    fetch: (request, env) => (app as MordnApp).fetch(request, env),
    host: '127.0.0.1',
    port: 0,
  });
  const config = loadConfig({
    // Per-workspace cgroups and quota filesystems need root; elsewhere the suite runs the
    // weak-limits path (the containment suites, which need root, are skipped there).
    ...(process.getuid?.() === 0 ? {} : { MORDN_SANDBOX_WEAK_LIMITS: 'true' }),
    MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    MORDN_LOG_LEVEL: 'debug',
    MORDN_PUBLIC_URL: server.url,
    ...database.target.environment,
    ...options.environment,
    PORT: '0',
  });
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const logger = createLogger({ level: config.logLevel, secrets: config.secretValues, destination });
  const deps = await composeDependencies(config, {
    logger,
    database,
    ...(options.sandboxReadiness ? { sandboxReadiness: options.sandboxReadiness } : {}),
    ...(options.authorizeToolCall ? { authorizeToolCall: options.authorizeToolCall } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.usage ? { usage: options.usage } : {}),
  });
  deps.selfBaseUrl = server.loopbackUrl;
  app = createApp(deps);
  options.extendApp?.(app, database);
  return {
    url: server.url,
    app,
    config,
    database,
    metrics: deps.metrics,
    lifecycle: deps.lifecycle,
    deps,
    logs,
    fetch: (path, init) => fetch(`${server.url}${path}`, init),
    close: async () => {
      await server.close(1_000);
      await deps.sandbox?.backend.close?.();
      await database.close();
    },
  };
}

/** JSON request init for the admin API. */
export function adminRequest(method: string, body?: unknown): RequestInit {
  return {
    method,
    headers: {
      Authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  };
}

/** Headers for an agent route. */
export function agentHeaders(key: string, userId = 'user-1'): Record<string, string> {
  return { Authorization: `Bearer ${key}`, 'X-Chat-User': userId };
}
