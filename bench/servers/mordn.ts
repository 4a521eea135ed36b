import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp } from '../../src/app.js';
import { composeDependencies } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startServer } from '../../src/server.js';

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
