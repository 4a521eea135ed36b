import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { createId } from '../ids.js';
import type { FileOwner } from '../uploads/file-registry.js';
import { ERASABLE_KINDS, type ErasureDependencies, eraseUserData, isEmpty } from './erasure.js';

type Db = Kysely<DatabaseSchema>;

/** The session cookie: HttpOnly, SameSite=Strict, Secure over HTTPS (set by `POST /console/api/session`). */
export const CONSOLE_COOKIE = 'mordn_console';
/** The header every console write must carry, holding the session's CSRF token. */
export const CSRF_HEADER = 'X-CSRF-Token';
/** A sign-in lasts 8 hours; then the operator signs in again. */
export const CONSOLE_SESSION_TTL_MS = 8 * 60 * 60 * 1000;

/** A signed-in console session as the server knows it. */
export interface ConsoleSession {
  /** `cs_…`: the audit actor is `console:<id>`, the preview user `console-preview:<id>`. */
  id: string;
  expiresAt: number;
}

/** A new session and the secret its cookie carries (returned once, stored only as a digest). */
export interface CreatedConsoleSession extends ConsoleSession {
  secret: string;
}

const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** The user the console's preview chat runs as: one per session, so sign-out erases exactly it. */
export function previewUserId(sessionId: string): string {
  return `console-preview:${sessionId}`;
}

/**
 * The session's CSRF token, derived from the cookie's secret: the page gets it from
 * `GET /console/api/session` (which only a same-origin script can read) and sends it back in
 * `X-CSRF-Token`. A cross-site form can make the browser send the cookie, never the header.
 */
export function csrfTokenFor(secret: string): string {
  return createHash('sha256').update(`mordn-console-csrf\0${secret}`).digest('base64url');
}

/** 403 `CSRF_FAILED` unless `presented` is the session's CSRF token (constant-time comparison). */
export function requireCsrfToken(secret: string, presented: string | undefined): void {
  if (presented === undefined || !timingSafeEqual(digest(presented), digest(csrfTokenFor(secret)))) {
    throw new ServiceError('CSRF_FAILED', `Console writes need the session's ${CSRF_HEADER} header.`);
  }
}

export async function createConsoleSession(db: Db, now = Date.now()): Promise<CreatedConsoleSession> {
  const secret = randomBytes(32).toString('base64url');
  const session = { id: createId('consoleSession'), expiresAt: now + CONSOLE_SESSION_TTL_MS };
  await db
    .insertInto('console_sessions')
    .values({
      id: session.id,
      secret_hash: digest(secret).toString('hex'),
      created_at: now,
      expires_at: session.expiresAt,
    })
    .execute();
  return { ...session, secret };
}

/** The live session a cookie's secret names, or undefined (unknown, malformed, expired, signed out). */
export async function findConsoleSession(
  db: Db,
  secret: string | undefined,
  now = Date.now(),
): Promise<ConsoleSession | undefined> {
  if (secret === undefined || !SECRET_PATTERN.test(secret)) return undefined;
  const row = await db
    .selectFrom('console_sessions')
    .select(['id', 'expires_at'])
    .where('secret_hash', '=', digest(secret).toString('hex'))
    .executeTakeFirst();
  if (!row || Number(row.expires_at) <= now) return undefined;
  return { id: row.id, expiresAt: Number(row.expires_at) };
}

/** Every agent in which the session's preview user left something (workspace, files, chats). */
async function previewOwners(db: Db, sessionId: string): Promise<FileOwner[]> {
  const userId = previewUserId(sessionId);
  const owners = new Map<string, FileOwner>();
  for (const table of ['workspaces', 'stored_files', 'chats'] as const) {
    const rows = await db
      .selectFrom(table)
      .select(['tenant_id', 'agent_id'])
      .distinct()
      .where('user_id', '=', userId)
      .execute();
    for (const row of rows) owners.set(row.agent_id, { tenantId: row.tenant_id, agentId: row.agent_id, userId });
  }
  return [...owners.values()];
}

/**
 * Ends a session: its preview user's workspaces, uploads, published files and chats are erased
 * in every agent it used, then the row goes (and with it, by cascade, the preview's sandbox
 * tokens). When a step of the erasure fails the session row is kept, so a later sign-out or the
 * next sweep finishes the job; the answer says whether it did.
 */
export async function endConsoleSession(deps: ErasureDependencies, sessionId: string): Promise<'complete' | 'partial'> {
  let complete = true;
  for (const owner of await previewOwners(deps.db, sessionId)) {
    const report = await eraseUserData(deps, owner, { dryRun: false, include: ERASABLE_KINDS });
    if (!isEmpty(report.remaining)) complete = false;
  }
  // An unfinished erasure keeps the session row, expired, so the sweep retries it.
  if (complete) await deps.db.deleteFrom('console_sessions').where('id', '=', sessionId).execute();
  else await deps.db.updateTable('console_sessions').set({ expires_at: 0 }).where('id', '=', sessionId).execute();
  return complete ? 'complete' : 'partial';
}

/** Ends every expired session (erasing its preview data); returns how many were fully ended. */
export async function sweepExpiredConsoleSessions(deps: ErasureDependencies, now = Date.now()): Promise<number> {
  const expired = await deps.db.selectFrom('console_sessions').select('id').where('expires_at', '<=', now).execute();
  let ended = 0;
  for (const { id } of expired) if ((await endConsoleSession(deps, id)) === 'complete') ended += 1;
  return ended;
}
