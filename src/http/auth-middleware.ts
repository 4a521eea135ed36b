import type { MiddlewareHandler } from 'hono';
import type { Kysely } from 'kysely';
import { adminTokenActor, consoleSessionActor } from '../admin/audit-log.js';
import { authenticateAdmin, authenticateAgent } from '../auth/authenticate.js';
import { type Permission, requirePermission } from '../auth/permissions.js';
import { authenticateSandboxMcpCaller, type SandboxMcpResource } from '../auth/sandbox-mcp-credentials.js';
import { rejectAnonymousUser, USER_HEADER } from '../auth/user-id.js';
import type { DatabaseSchema } from '../db/schema.js';
import type { AppEnv } from './app-env.js';
import { consoleSessionOf } from './console-auth.js';
import { trustedPrincipalOf } from './trusted-principal.js';

/**
 * Every value of a request header, unmerged and exactly as received. Node's raw headers show a
 * repeated header as two entries (its parser has already dropped the spaces and tabs around each
 * value, and nothing more is trimmed here: a trailing U+00A0 must stay visible to validation).
 * Elsewhere (`app.request()`, other runtimes) the Fetch API has already joined repeats with
 * `, `, and we see one value containing a comma.
 */
export function headerValues(c: Parameters<MiddlewareHandler<AppEnv>>[0], name: string): string[] {
  const rawHeaders = c.env?.incoming?.rawHeaders;
  if (rawHeaders) {
    const lower = name.toLowerCase();
    const values: string[] = [];
    for (let index = 0; index < rawHeaders.length; index += 2) {
      if (rawHeaders[index]?.toLowerCase() === lower) values.push(rawHeaders[index + 1] ?? '');
    }
    return values;
  }
  const value = c.req.header(name);
  return value === undefined ? [] : [value];
}

export interface AgentAuthOptions {
  /** Sandbox-related routes refuse `anon:` users (403 `ANONYMOUS_USER`). */
  rejectAnonymous?: boolean;
}

/**
 * Authenticates an agent route and checks the key's permission, then exposes the principal as
 * `c.get('principal')`. Runs on every request: revocations apply from the next one. A request the
 * service makes to itself in process may carry its principal instead (see `inProcessTransport`).
 */
export function agentAuth(
  db: Kysely<DatabaseSchema>,
  permission: Permission,
  options: AgentAuthOptions = {},
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // The service's own in-process callers (the console preview) come with their principal.
    const principal =
      trustedPrincipalOf(c.env) ??
      (await authenticateAgent(db, {
        authorization: c.req.header('Authorization'),
        userHeaderValues: headerValues(c, USER_HEADER),
      }));
    requirePermission(principal, permission);
    if (options.rejectAnonymous) rejectAnonymousUser(principal.userId);
    c.set('principal', principal);
    await next();
  };
}

/**
 * Authenticates `/v1/sandbox/mcp` (every MCP revision it serves): an agent key with `X-Chat-User`
 * or a per-user sandbox token (see `authenticateSandboxMcpCaller`), then requires `read` and a
 * signed-in user. Exposes `c.get('principal')` and `c.get('sandboxTools')`, the tools this
 * credential reaches. The only route that accepts a sandbox token.
 */
export function sandboxMcpAuth(db: Kysely<DatabaseSchema>, resource: SandboxMcpResource): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { principal, tools } = await authenticateSandboxMcpCaller(
      db,
      { authorization: c.req.header('Authorization'), userHeaderValues: headerValues(c, USER_HEADER) },
      resource,
    );
    requirePermission(principal, 'read');
    rejectAnonymousUser(principal.userId);
    c.set('principal', principal);
    c.set('sandboxTools', tools);
    await next();
  };
}

/**
 * Guards `/v1/admin/*` with the operator's bearer token (constant-time comparison) or, for a
 * request without `Authorization`, a signed-in web console session (its cookie, and for a write
 * its CSRF token). Exposes who it is as `c.get('adminActor')` for the audit log.
 */
export function adminAuth(adminToken: string, db: Kysely<DatabaseSchema>): MiddlewareHandler<AppEnv> {
  const tokenActor = adminTokenActor(adminToken);
  return async (c, next) => {
    const authorization = c.req.header('Authorization');
    const signedIn = authorization === undefined ? await consoleSessionOf(c, db) : undefined;
    if (signedIn) {
      c.set('adminActor', consoleSessionActor(signedIn.session.id));
    } else {
      authenticateAdmin(adminToken, authorization);
      c.set('adminActor', tokenActor);
    }
    await next();
  };
}
