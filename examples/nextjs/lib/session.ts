import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A deliberately small session: the cookie holds `<user>.<hmac>`, signed with SESSION_SECRET.
 * Replace it with your own authentication — what matters is that the user id handed to Mordn
 * comes from a session the server verified, never from the browser's say-so.
 */
export const SESSION_COOKIE = 'session';

/** The user ids this demo accepts: short, and never `anon:…` (Mordn refuses those for sandboxes). */
export const USER_ID = /^[A-Za-z0-9._-]{1,64}$/;

function secret(): string {
  const value = process.env.SESSION_SECRET;
  if (!value || value.length < 32) throw new Error('SESSION_SECRET must be set to at least 32 characters.');
  return value;
}

function signature(userId: string): string {
  return createHmac('sha256', secret()).update(userId).digest('base64url');
}

/** The cookie value for a signed-in user. */
export function signSession(userId: string): string {
  if (!USER_ID.test(userId)) throw new Error('Invalid user id.');
  return `${userId}.${signature(userId)}`;
}

/** The user of a cookie value, or null when it is missing, malformed or not signed by us. */
export function verifySession(value: string | undefined): string | null {
  if (!value) return null;
  const dot = value.lastIndexOf('.');
  const userId = value.slice(0, dot);
  if (dot < 0 || !USER_ID.test(userId)) return null;
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(signature(userId));
  return given.length === expected.length && timingSafeEqual(given, expected) ? userId : null;
}

/** `getUserId` for createMordnHandler: the verified user of a request, from its session cookie. */
export function getUserId(request: Request): string | null {
  const cookies = request.headers.get('cookie') ?? '';
  for (const pair of cookies.split(';')) {
    const [name, ...value] = pair.trim().split('=');
    if (name === SESSION_COOKIE) return verifySession(value.join('='));
  }
  return null;
}
