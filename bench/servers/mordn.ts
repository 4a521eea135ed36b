import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createLifecycle } from '../../src/lifecycle.js';
import { createLogger } from '../../src/logger.js';
import { createHttpMetrics } from '../../src/metrics.js';
import { startServer } from '../../src/server.js';

/**
 * The service as `npm start` builds it (default log level, process metrics, SQLite), on an
 * ephemeral port, printing `{port}` once listening.
 */
const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-bench-'));
const config = loadConfig({ ...process.env, MORDN_DATA_DIR: dataDir, PORT: '0' });
const logger = createLogger({ level: config.logLevel, secrets: config.secretValues });
const database = await openDatabase(config.database);
const app = createApp({
  config,
  database,
  logger,
  metrics: createHttpMetrics({ processMetrics: true }),
  lifecycle: createLifecycle(),
});
const server = await startServer({ fetch: app.fetch, host: '127.0.0.1', port: 0 });
process.stderr.write(`${JSON.stringify({ port: Number(new URL(server.url).port) })}\n`);
