import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp } from '../../src/app.js';
import { type ComposedDependencies, composeDependencies } from '../../src/compose.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startServer } from '../../src/server.js';
import { removeWorkspacesRoot } from '../../test/support/workspace-roots.js';

type Fetch = Parameters<typeof startServer>[0]['fetch'];

/** What a bench server's routes can reach: the composed service and where its data lives. */
export interface BenchService {
  config: Config;
  deps: ComposedDependencies;
  dataDir: string;
  /** The service's own app. */
  fetch: Fetch;
}

/**
 * Serves the service as `npm start` builds it (default log level, process metrics, SQLite, fs
 * storage, a fresh data directory) on an ephemeral port and prints `{"port":…}` once listening;
 * extra environment (an admin token, say) comes from the benchmark. `route` may put bench-only
 * routes in front of the app. On SIGTERM the workspace sandboxes end and their filesystems are
 * unmounted with the data directory, so benchmark runs leave no loop devices behind.
 *
 * @example
 * await serveBenchService(); // bench/servers/mordn.ts
 */
export async function serveBenchService(route: (service: BenchService) => Fetch = (service) => service.fetch) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-bench-'));
  const config = loadConfig({ ...process.env, MORDN_DATA_DIR: dataDir, PORT: '0' });
  const logger = createLogger({ level: config.logLevel, secrets: config.secretValues });
  // BENCH_METERING=off measures the service without usage metering and limits (their cost).
  const metering = process.env.BENCH_METERING !== 'off';
  const deps = await composeDependencies(config, { logger, processMetrics: true, metering });
  const fetch = route({ config, deps, dataDir, fetch: createApp(deps).fetch });
  const server = await startServer({ fetch, host: '127.0.0.1', port: 0 });
  deps.selfBaseUrl = server.loopbackUrl;
  process.stderr.write(`${JSON.stringify({ port: Number(new URL(server.url).port) })}\n`);
  process.once('SIGTERM', () => {
    void (async () => {
      await server.close(1_000).catch(() => undefined);
      await deps.close().catch(() => undefined);
      await removeWorkspacesRoot(dataDir);
      process.exit(0);
    })();
  });
}
