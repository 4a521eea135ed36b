import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Kysely } from 'kysely';
import { CONSOLE_COOKIE, CSRF_HEADER, findConsoleSession, requireCsrfToken } from '../admin/console-sessions.js';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import type { AppEnv } from './app-env.js';
import type { SignedInConsole } from './signed-in-console.js';

/** Methods that change nothing and so need no CSRF token. */
export const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The console session of a request, or undefined when its cookie is missing, unknown or expired.
 * A write (any method but GET, HEAD and OPTIONS) must also carry the session's CSRF token: 403
 * `CSRF_FAILED` otherwise.
 */
export async function consoleSessionOf(
  c: Context<AppEnv>,
  db: Kysely<DatabaseSchema>,
): Promise<SignedInConsole | undefined> {
  const secret = getCookie(c, CONSOLE_COOKIE);
  const session = await findConsoleSession(db, secret);
  if (!session || secret === undefined) return undefined;
  if (!READ_METHODS.has(c.req.method)) requireCsrfToken(secret, c.req.header(CSRF_HEADER));
  return { session, secret };
}

/** Console routes: 401 `CONSOLE_SIGNED_OUT` without a live session; exposes `c.get('console')`. */
export function consoleAuth(db: Kysely<DatabaseSchema>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const signedIn = await consoleSessionOf(c, db);
    if (!signedIn) throw new ServiceError('CONSOLE_SIGNED_OUT', 'Sign in to the console with the admin token.');
    c.set('console', signedIn);
    await next();
  };
}
