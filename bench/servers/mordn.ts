import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp } from '../../src/app.js';
import { composeDependencies } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startServer } from '../../src/server.js';
import { removeWorkspacesRoot } from '../../test/support/workspace-roots.js';

/**
 * The service as `npm start` builds it (default log level, process metrics, SQLite, fs storage),
 * on an ephemeral port, printing `{"port":…}` once listening. Extra environment (e.g. an admin
 * token) comes from the benchmark.
 */
const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-bench-'));
const config = loadConfig({ ...process.env, MORDN_DATA_DIR: dataDir, PORT: '0' });
const logger = createLogger({ level: config.logLevel, secrets: config.secretValues });
const deps = await composeDependencies(config, { logger, processMetrics: true });
const server = await startServer({ fetch: createApp(deps).fetch, host: '127.0.0.1', port: 0 });
deps.selfBaseUrl = server.loopbackUrl;
process.stderr.write(`${JSON.stringify({ port: Number(new URL(server.url).port) })}\n`);
// Stopped with SIGTERM: the workspace sandboxes end and their filesystems are unmounted with the
// data directory, so benchmark runs leave no loop devices behind.
process.once('SIGTERM', () => {
  void (async () => {
    await server.close(1_000).catch(() => undefined);
    await deps.close().catch(() => undefined);
    await removeWorkspacesRoot(dataDir);
    process.exit(0);
  })();
});
