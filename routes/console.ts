import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { appendAdminWrite, consoleSessionActor } from '../src/admin/audit-log.js';
import {
  CONSOLE_COOKIE,
  CONSOLE_SESSION_TTL_MS,
  createConsoleSession,
  csrfTokenFor,
  endConsoleSession,
  sweepExpiredConsoleSessions,
} from '../src/admin/console-sessions.js';
import { erasureDependencies } from '../src/admin/erasure.js';
import { isAdminToken } from '../src/auth/authenticate.js';
import type { AppDependencies } from '../src/dependencies.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { consoleAuth } from '../src/http/console-auth.js';
import { jsonBody } from '../src/http/json-body.js';
import { problemResponses } from '../src/http/openapi.js';
import { packageRoot, packageVersion } from '../src/package-root.js';
import { registerConsolePreviewRoutes } from './console-preview.js';
import { checkServiceReadiness } from './health.js';

/** Where `npm run build` puts the console's static files (index.html and hashed assets). */
const CONSOLE_ASSETS = path.join('dist', 'console');
const CONSOLE_BODY_LIMIT = 16 * 1024;

/**
 * Every console page and asset: nothing but the service's own scripts, styles and API, never
 * framed. The console has no inline script or style to allow.
 */
const CONSOLE_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

const SessionSchema = z
  .object({
    sessionId: z.string().openapi({ description: 'Named in the audit log as `console:<sessionId>`.' }),
    csrfToken: z.string().openapi({ description: 'Send it as `X-CSRF-Token` with every write.' }),
    expiresAt: z.string().openapi({ description: 'ISO 8601: when the session ends.' }),
  })
  .openapi('ConsoleSession');

const StatusSchema = z
  .object({
    version: z.string(),
    readiness: z.object({
      status: z.enum(['ready', 'unavailable', 'draining']),
      checks: z.record(z.string(), z.enum(['ok', 'failed', 'timeout'])),
      reasons: z.record(z.string(), z.string()).optional(),
    }),
    sandbox: z.object({
      operatorEnabled: z.boolean().openapi({ description: 'MORDN_SANDBOX_ENABLED: nothing opens without it.' }),
      backend: z.string().nullable(),
      containment: z.string().nullable().openapi({ description: 'What isolates one workspace from the host.' }),
      egress: z
        .object({
          enabled: z
            .boolean()
            .openapi({ description: 'MORDN_SANDBOX_EGRESS=on: nothing leaves a sandbox without it.' }),
          tenants: z
            .array(z.string())
            .nullable()
            .openapi({ description: 'MORDN_SANDBOX_EGRESS_TENANTS: the only tenants egress opens for; null for all.' }),
          packageIndexUrl: z.string().openapi({ description: 'The package index the `packages` mode opens.' }),
          ports: z.array(z.number().int()).openapi({ description: 'The only ports a connection may use.' }),
          maxConnections: z.number().int().openapi({ description: 'Connections a workspace may hold open at once.' }),
          bytesPerDay: z.number().int().openapi({ description: 'Bytes a workspace may move per UTC day.' }),
        })
        .openapi({ description: "The operator's ceiling on sandbox network access (see the agent's `network`)." }),
    }),
    storage: z.object({ driver: z.string() }),
    database: z.object({ dialect: z.string() }),
    model: z.object({ configured: z.boolean(), provider: z.string().nullable(), modelId: z.string().nullable() }),
  })
  .openapi('ConsoleStatus');

const CONSOLE_TAGS = ['Console'];
const COOKIE_SECURITY = [{ consoleSession: [] }];

const signInRoute = createRoute({
  method: 'post',
  path: '/console/api/session',
  tags: CONSOLE_TAGS,
  summary: 'Sign in to the web console with the admin token; answers the session and sets its cookie.',
  description:
    'The cookie (`mordn_console`) is `HttpOnly`, `SameSite=Strict`, `Path=/`, `Secure` when the request or `MORDN_PUBLIC_URL` is HTTPS, and expires with the session (8 hours). Sessions are kept in the database, so every replica knows them. With the cookie, `/v1/admin/*` and the console routes need no `Authorization`; every write must also send `X-CSRF-Token`.',
  request: {
    body: {
      required: true,
      content: { 'application/json': { schema: z.object({ token: z.string().min(1).max(4096) }) } },
    },
  },
  responses: {
    200: { description: 'Signed in.', content: { 'application/json': { schema: SessionSchema } } },
    ...problemResponses(400, 401, 413, 415),
  },
});

const sessionRoute = createRoute({
  method: 'get',
  path: '/console/api/session',
  tags: CONSOLE_TAGS,
  summary: 'The signed-in session and its CSRF token (401 `CONSOLE_SIGNED_OUT` without one).',
  security: COOKIE_SECURITY,
  responses: {
    200: { description: 'Signed in.', content: { 'application/json': { schema: SessionSchema } } },
    ...problemResponses(401),
  },
});

const signOutRoute = createRoute({
  method: 'delete',
  path: '/console/api/session',
  tags: CONSOLE_TAGS,
  summary: "Sign out: erases the preview chat's data, ends the session and its sandbox tokens, clears the cookie.",
  description:
    "The preview user `console-preview:<sessionId>` is erased in every agent it used (workspace, uploads, published files, chats). When storage or the sandbox backend fails, the session still ends for the browser and its data is erased by the next sign-in's sweep. Needs `X-CSRF-Token`.",
  security: COOKIE_SECURITY,
  responses: { 204: { description: 'Signed out.' }, ...problemResponses(401, 403) },
});

const statusRoute = createRoute({
  method: 'get',
  path: '/console/api/status',
  tags: CONSOLE_TAGS,
  summary:
    "The operator's view: sandbox switch, backend, containment and egress ceiling, readiness, storage, database and model.",
  security: COOKIE_SECURITY,
  responses: {
    200: { description: 'Status.', content: { 'application/json': { schema: StatusSchema } } },
    ...problemResponses(401),
  },
});

/** What keeps one workspace from the host, in the operator's words. */
function containmentOf(sandbox: AppDependencies['config']['sandbox']): string {
  if (sandbox.backend === 'docker') {
    return sandbox.docker.runtime === 'runsc' ? 'gVisor (runsc) containers' : 'Docker containers (runc)';
  }
  return sandbox.weakLimits
    ? 'bubblewrap namespaces and seccomp; per-process limits only (MORDN_SANDBOX_WEAK_LIMITS)'
    : 'bubblewrap namespaces, seccomp, cgroup and filesystem quotas';
}

/** The egress settings an operator may see in the console: the ceiling, never the private ranges. */
function egressCeilingOf(egress: AppDependencies['config']['sandbox']['egress']) {
  return {
    enabled: egress.enabled,
    tenants: egress.allowedTenants ?? null,
    packageIndexUrl: egress.packageIndexUrl,
    ports: egress.ports,
    maxConnections: egress.maxConnections,
    bytesPerDay: egress.bytesPerDay,
  };
}

function isHttps(c: Context<AppEnv>, publicUrl: string): boolean {
  return new URL(c.req.url).protocol === 'https:' || publicUrl.startsWith('https:');
}

/** The built console: index.html and its hashed assets, read once. */
function consoleFiles() {
  const directory = path.join(packageRoot(), CONSOLE_ASSETS);
  let loaded: Promise<Map<string, Buffer>> | undefined;
  const load = async () => {
    const files = new Map<string, Buffer>();
    files.set('index.html', await readFile(path.join(directory, 'index.html')));
    for (const name of await readdir(path.join(directory, 'assets')).catch(() => [])) {
      files.set(`assets/${name}`, await readFile(path.join(directory, 'assets', name)));
    }
    return files;
  };
  return async (): Promise<Map<string, Buffer>> => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw new ServiceError(
        'INTERNAL',
        `The console's files are missing from ${CONSOLE_ASSETS} (run npm run build): ${(error as Error).message}`,
      );
    });
    return loaded;
  };
}

/**
 * The web console at `/console`, registered only with `MORDN_ADMIN_TOKEN`: its static pages, the
 * sign-in that exchanges the admin token for a session cookie, the operator status and the
 * preview chat. The pages use the admin API itself with the cookie (see `adminAuth`).
 */
export function registerConsoleRoutes(app: OpenAPIHono<AppEnv>, deps: AppDependencies, adminToken: string): void {
  const { db } = deps.database;
  const erasure = erasureDependencies(deps);
  const files = consoleFiles();
  app.openAPIRegistry.registerComponent('securitySchemes', 'consoleSession', {
    type: 'apiKey',
    in: 'cookie',
    name: CONSOLE_COOKIE,
    description: 'The web console session (POST /console/api/session). Writes also need X-CSRF-Token.',
  });

  app.use('/console/*', async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(CONSOLE_SECURITY_HEADERS)) c.res.headers.set(name, value);
  });
  // The preview passes its bodies (chat turns, uploads) on unread: only the sign-in is parsed here.
  app.use(
    '/console/api/session',
    jsonBody({ maxBytes: CONSOLE_BODY_LIMIT, idleTimeoutMs: deps.config.requestIdleTimeoutMs }),
  );

  const answerSession = (c: Context<AppEnv>, sessionId: string, secret: string, expiresAt: number) => {
    c.header('Cache-Control', 'no-store');
    return c.json({ sessionId, csrfToken: csrfTokenFor(secret), expiresAt: new Date(expiresAt).toISOString() }, 200);
  };

  app.openapi(signInRoute, async (c) => {
    if (!isAdminToken(adminToken, c.req.valid('json').token)) {
      deps.logger.warn({ requestId: c.get('requestId') }, 'console sign-in refused: wrong admin token');
      throw new ServiceError('INVALID_ADMIN_TOKEN', 'That is not the admin token (MORDN_ADMIN_TOKEN).');
    }
    // Sessions that expired unattended still hold preview data: erase it now (best effort).
    await sweepExpiredConsoleSessions(erasure).catch((error: unknown) =>
      deps.logger.warn({ requestId: c.get('requestId'), err: error }, 'console session sweep failed'),
    );
    const session = await createConsoleSession(db);
    setCookie(c, CONSOLE_COOKIE, session.secret, {
      path: '/',
      httpOnly: true,
      sameSite: 'Strict',
      secure: isHttps(c, deps.config.publicUrl),
      maxAge: Math.floor(CONSOLE_SESSION_TTL_MS / 1000),
    });
    await recordConsoleWrite(c, session.id, 200);
    return answerSession(c, session.id, session.secret, session.expiresAt);
  });

  app.openapi({ ...sessionRoute, middleware: [consoleAuth(db)] as const }, (c) => {
    const { session, secret } = c.get('console');
    return answerSession(c, session.id, secret, session.expiresAt);
  });

  app.openapi({ ...signOutRoute, middleware: [consoleAuth(db)] as const }, async (c) => {
    const { session } = c.get('console');
    const outcome = await endConsoleSession(erasure, session.id).catch((error: unknown) => {
      deps.logger.error({ requestId: c.get('requestId'), err: error }, 'console sign-out could not erase the preview');
      return 'partial' as const;
    });
    if (outcome === 'partial') {
      deps.logger.warn(
        { requestId: c.get('requestId'), sessionId: session.id },
        'console preview data left for the sweep',
      );
    }
    deleteCookie(c, CONSOLE_COOKIE, { path: '/', secure: isHttps(c, deps.config.publicUrl) });
    await recordConsoleWrite(c, session.id, 204);
    return c.body(null, 204);
  });

  app.openapi({ ...statusRoute, middleware: [consoleAuth(db)] as const }, async (c) => {
    const readiness = await checkServiceReadiness(deps);
    const { sandbox, storage, model } = deps.config;
    c.header('Cache-Control', 'no-store');
    return c.json(
      {
        version: packageVersion(),
        readiness,
        sandbox: {
          operatorEnabled: sandbox.enabled,
          backend: sandbox.enabled ? sandbox.backend : null,
          containment: sandbox.enabled ? containmentOf(sandbox) : null,
          egress: egressCeilingOf(sandbox.egress),
        },
        storage: { driver: storage.kind },
        database: { dialect: deps.database.dialect },
        model: { configured: model !== undefined, provider: model?.provider ?? null, modelId: model?.modelId ?? null },
      } as const,
      200,
    );
  });

  registerConsolePreviewRoutes(app, deps);

  const page = async (c: Context<AppEnv>) => {
    const index = (await files()).get('index.html') as Buffer;
    return c.body(new Uint8Array(index), 200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-cache',
    });
  };
  app.get('/console', page);
  app.get('/console/', page);
  app.get('/console/assets/:name', async (c) => {
    const name = c.req.param('name');
    const file = (await files()).get(`assets/${name}`);
    const type = CONTENT_TYPES[path.extname(name)];
    if (!file || !type) throw new ServiceError('NOT_FOUND', `No console asset ${name}.`);
    // Asset names carry a content hash: a new build has new names.
    return c.body(new Uint8Array(file), 200, {
      'Content-Type': type,
      'Cache-Control': 'public, max-age=31536000, immutable',
    });
  });

  /** Sign-in and sign-out are recorded like admin writes, under the session they start or end. */
  async function recordConsoleWrite(c: Context<AppEnv>, sessionId: string, status: number): Promise<void> {
    await appendAdminWrite(db, {
      actor: consoleSessionActor(sessionId),
      method: c.req.method,
      route: '/console/api/session',
      target: {},
      requestId: c.get('requestId'),
      status,
    }).catch((error: unknown) =>
      deps.logger.error({ requestId: c.get('requestId'), err: error }, 'admin audit write failed'),
    );
  }
}
