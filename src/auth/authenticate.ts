import { createHash, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { findActiveApiKey, isKeyUseStale, isWellFormedApiKey, recordApiKeyUse } from './api-keys.js';
import type { AgentPrincipal } from './permissions.js';
import { parseUserId } from './user-id.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer' };

/** The credential parts of a request, read by the transport (HTTP headers, MCP request…). */
export interface AgentCredentials {
  /** The `Authorization` header value, if any. */
  authorization: string | undefined;
  /** Every value of `X-Chat-User`, in order; more than one is an error. */
  userHeaderValues: readonly string[];
}

/** Extracts the token of `Authorization: Bearer <token>`, or `undefined` when the header is absent. */
export function readBearerToken(
  authorization: string | undefined,
  code: 'INVALID_API_KEY' | 'INVALID_ADMIN_TOKEN' | 'INVALID_METRICS_TOKEN',
) {
  if (authorization === undefined || authorization.trim() === '') return undefined;
  const match = /^Bearer +(\S+)$/i.exec(authorization.trim());
  if (!match) {
    throw new ServiceError(code, 'The Authorization header must be "Bearer <token>".', { headers: CHALLENGE });
  }
  return match[1] as string;
}

/**
 * Authenticates an agent request: the API key decides tenant, agent and permissions; the
 * `X-Chat-User` header names the verified end user. Key problems answer 401 before user problems
 * answer 400. Revocation takes effect on the next request: nothing here is cached. The key's
 * last use is written at most once a minute (`KEY_USE_RESOLUTION_MS`), once key and user are accepted.
 */
export async function authenticateAgent(
  db: Kysely<DatabaseSchema>,
  credentials: AgentCredentials,
): Promise<AgentPrincipal> {
  const token = readBearerToken(credentials.authorization, 'INVALID_API_KEY');
  if (token === undefined) {
    throw new ServiceError('MISSING_API_KEY', 'An agent API key is required: Authorization: Bearer <key>.', {
      headers: CHALLENGE,
    });
  }
  // Built only when thrown: an error captures a stack trace, which every valid request would pay for.
  const invalid = () =>
    new ServiceError('INVALID_API_KEY', 'The API key is invalid or has been revoked.', { headers: CHALLENGE });
  if (!isWellFormedApiKey(token)) throw invalid();
  const key = await findActiveApiKey(db, token);
  if (!key) throw invalid();
  const userId = parseUserId(credentials.userHeaderValues);
  const now = Date.now();
  if (isKeyUseStale(key.lastUsedAt, now)) {
    // Last use is advisory: a failed write (a full disk) must not refuse a valid key, and the
    // next request tries again because the recorded use is still stale.
    await recordApiKeyUse(db, key.keyId, now).catch(() => undefined);
  }
  return { tenantId: key.tenantId, agentId: key.agentId, keyId: key.keyId, permissions: key.permissions, userId };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** True when `presented` is the operator's token (constant-time comparison of digests). */
export function isAdminToken(adminToken: string, presented: unknown): boolean {
  return typeof presented === 'string' && timingSafeEqual(digest(presented), digest(adminToken));
}

/** Checks an operator's bearer token in constant time; throws 401 with `code` otherwise. */
function authenticateOperatorToken(
  expectedToken: string,
  authorization: string | undefined,
  refusal: { code: 'INVALID_ADMIN_TOKEN' | 'INVALID_METRICS_TOKEN'; message: string },
): void {
  const token = readBearerToken(authorization, refusal.code);
  if (!isAdminToken(expectedToken, token)) {
    throw new ServiceError(refusal.code, refusal.message, { headers: CHALLENGE });
  }
}

/** Checks the admin bearer token in constant time; throws 401 `INVALID_ADMIN_TOKEN` otherwise. */
export function authenticateAdmin(expectedToken: string, authorization: string | undefined): void {
  authenticateOperatorToken(expectedToken, authorization, {
    code: 'INVALID_ADMIN_TOKEN',
    message: 'Admin routes require Authorization: Bearer <MORDN_ADMIN_TOKEN>.',
  });
}

/** Checks the metrics bearer token in constant time; throws 401 `INVALID_METRICS_TOKEN` otherwise. */
export function authenticateMetrics(expectedToken: string, authorization: string | undefined): void {
  authenticateOperatorToken(expectedToken, authorization, {
    code: 'INVALID_METRICS_TOKEN',
    message: '/metrics requires Authorization: Bearer <MORDN_METRICS_TOKEN>.',
  });
}
