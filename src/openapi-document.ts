import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument, createApp } from './app.js';
import { composeDependencies } from './compose.js';
import { loadConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { createLogger } from './logger.js';

/**
 * Renders the OpenAPI document of the full app (admin routes and the `fs` download route
 * included) from the route schemas, as committed in `openapi/openapi.json`. The app is built over
 * an in-memory database and a temporary data directory that no request ever touches.
 */
export async function renderOpenApiDocument(): Promise<string> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-openapi-'));
  const database = await openDatabase({ kind: 'sqlite', file: ':memory:' });
  try {
    const config = loadConfig({ MORDN_ADMIN_TOKEN: 'openapi-generation-only-token', MORDN_DATA_DIR: dataDir });
    const deps = await composeDependencies(config, { logger: createLogger({ level: 'silent' }), database });
    return `${JSON.stringify(buildOpenApiDocument(createApp(deps)), null, 2)}\n`;
  } finally {
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
