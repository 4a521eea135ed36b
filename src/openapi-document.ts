import { buildOpenApiDocument, createApp } from './app.js';
import { loadConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { createLifecycle } from './lifecycle.js';
import { createLogger } from './logger.js';
import { createHttpMetrics } from './metrics.js';

/**
 * Renders the OpenAPI document of the full app (admin routes included) from the route schemas, as
 * committed in `openapi/openapi.json`. The app is built over an in-memory database that no
 * request ever touches.
 */
export async function renderOpenApiDocument(): Promise<string> {
  const database = await openDatabase({ kind: 'sqlite', file: ':memory:' });
  try {
    const app = createApp({
      config: loadConfig({ MORDN_ADMIN_TOKEN: 'openapi-generation-only-token' }),
      database,
      logger: createLogger({ level: 'silent' }),
      metrics: createHttpMetrics(),
      lifecycle: createLifecycle(),
    });
    return `${JSON.stringify(buildOpenApiDocument(app), null, 2)}\n`;
  } finally {
    await database.close();
  }
}
