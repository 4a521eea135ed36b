/**
 * `mordn/app`: build and configure the Mordn service inside your own process.
 *
 * @example
 * import { createApp, loadConfig } from 'mordn/app';
 */
export { type AppDependencies, buildOpenApiDocument, createApp, type MordnApp } from '../app.js';
export { type Config, ConfigError, loadConfig } from '../config.js';
export { type Database, openDatabase } from '../db/database.js';
export { createLifecycle, type Lifecycle } from '../lifecycle.js';
export { createLogger } from '../logger.js';
export { createHttpMetrics, type HttpMetrics } from '../metrics.js';
export { type RunningServer, startServer } from '../server.js';
