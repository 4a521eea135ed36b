import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../src/http/app-env.js';
import { packageRoot } from '../src/package-root.js';

/** The generated, committed document (`npm run openapi` writes it; a test fails when stale). */
export const OPENAPI_FILE = path.join('openapi', 'openapi.json');

/** swagger-ui assets served from the installed package, so `/docs` works offline. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Mordn API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });\n`;

const DOCS_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

function cachedFile(resolve: () => string): () => Promise<Buffer> {
  let pending: Promise<Buffer> | undefined;
  return () => {
    pending ??= readFile(resolve()).catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}

/** `/openapi.json` (the committed file, read once) and an interactive reference at `/docs`. */
export function registerDocsRoutes(app: OpenAPIHono<AppEnv>): void {
  const openApiDocument = cachedFile(() => path.join(packageRoot(), OPENAPI_FILE));
  const swaggerDirectory = () => path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const assets = new Map(
    Object.keys(ASSETS).map((name) => [name, cachedFile(() => path.join(swaggerDirectory(), name))]),
  );

  app.get('/openapi.json', async (c) => {
    c.header('Content-Type', 'application/json; charset=utf-8');
    return c.body(new Uint8Array(await openApiDocument()));
  });

  app.get('/docs', (c) => c.html(PAGE, 200, DOCS_SECURITY_HEADERS));
  app.get('/docs/init.js', (c) =>
    c.body(INIT, 200, { ...DOCS_SECURITY_HEADERS, 'Content-Type': 'text/javascript; charset=utf-8' }),
  );
  app.get('/docs/assets/:name', async (c) => {
    const name = c.req.param('name');
    const load = assets.get(name);
    if (!load) return c.notFound();
    return c.body(new Uint8Array(await load()), 200, {
      ...DOCS_SECURITY_HEADERS,
      'Content-Type': ASSETS[name] as string,
      'Cache-Control': 'public, max-age=86400',
    });
  });
}
