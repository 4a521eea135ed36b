import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { consoleSessionActor } from '../admin/audit-log.js';
import { SANDBOX_TOOL_NAMES, type SandboxToolName } from '../config.js';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { createId } from '../ids.js';
import { isWellFormedApiKey } from './api-keys.js';
import { type Permission, parsePermissions, serializePermissions } from './permissions.js';

/**
 * `mordn_mcp_` followed by 32 random bytes in base64url: 53 characters, where an API key
 * (`mordn_` + 43) has 49, so neither parser can take one for the other.
 */
export const SANDBOX_TOKEN_PREFIX = 'mordn_mcp_';
const TOKEN_PATTERN = /^mordn_mcp_[A-Za-z0-9_-]{43}$/;

/** The default lifetime of a token: 15 minutes. */
export const DEFAULT_SANDBOX_TOKEN_SECONDS = 15 * 60;
/** The shortest lifetime a token may be asked for. */
export const MIN_SANDBOX_TOKEN_SECONDS = 60;

/** The path tokens are valid on, and the only one. */
export const SANDBOX_MCP_PATH = '/v1/sandbox/mcp';

/** The audience of every token minted by a service published at `publicUrl` (no trailing slash). */
export function sandboxMcpAudience(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${SANDBOX_MCP_PATH}`;
}

/**
 * Whether a bearer value is meant as a sandbox token (its prefix says so and it is not an API
 * key), so it is checked as one and refused as one. Anything else is taken for an API key.
 */
export function looksLikeSandboxToken(bearer: string): boolean {
  return bearer.startsWith(SANDBOX_TOKEN_PREFIX) && !isWellFormedApiKey(bearer);
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Whose a token is: exactly one `(tenant, agent, user)`. */
export interface SandboxTokenOwner {
  tenantId: string;
  agentId: string;
  userId: string;
}

/**
 * Who vouches for a token: the agent key that minted it, or the web console session whose
 * preview chat it serves. Revoking the key, or signing out, ends the token.
 */
export type SandboxTokenIssuer = { apiKeyId: string } | { consoleSessionId: string };

export interface MintSandboxTokenRequest {
  owner: SandboxTokenOwner;
  issuer: SandboxTokenIssuer;
  audience: string;
  ttlSeconds: number;
  permissions: readonly Permission[];
  /** A subset of the six tools; undefined for all of them. */
  tools?: readonly SandboxToolName[] | undefined;
  now?: number;
}

export interface MintedSandboxToken {
  id: string;
  /** The full token: returned once, never stored. */
  token: string;
  expiresAt: string;
  permissions: Permission[];
  /** The tools the token reaches, in their listing order. */
  tools: SandboxToolName[];
}

/** Tools in their canonical order, without repeats. */
function canonicalTools(tools: readonly SandboxToolName[] | undefined): SandboxToolName[] {
  return SANDBOX_TOOL_NAMES.filter((name) => tools === undefined || tools.includes(name));
}

/**
 * Mints a token for one user of one agent. The owner's expired and revoked rows are purged on
 * the way (they can never be accepted again), so a user's rows stay bounded by what is live.
 */
export async function mintSandboxToken(
  db: Kysely<DatabaseSchema>,
  request: MintSandboxTokenRequest,
): Promise<MintedSandboxToken> {
  const now = request.now ?? Date.now();
  const { owner } = request;
  const token = `${SANDBOX_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = createId('sandboxToken');
  const permissions = serializePermissions(request.permissions);
  const tools = canonicalTools(request.tools);
  const expiresAt = now + request.ttlSeconds * 1000;
  await db
    .deleteFrom('sandbox_tokens')
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('revoked_at', 'is not', null)]))
    .execute();
  await db
    .insertInto('sandbox_tokens')
    .values({
      id,
      tenant_id: owner.tenantId,
      agent_id: owner.agentId,
      user_id: owner.userId,
      api_key_id: 'apiKeyId' in request.issuer ? request.issuer.apiKeyId : null,
      console_session_id: 'consoleSessionId' in request.issuer ? request.issuer.consoleSessionId : null,
      token_hash: hashToken(token),
      audience: request.audience,
      permissions,
      tools: request.tools === undefined ? null : JSON.stringify(tools),
      expires_at: expiresAt,
      revoked_at: null,
      created_at: now,
    })
    .execute();
  return { id, token, expiresAt: new Date(expiresAt).toISOString(), permissions: parsePermissions(permissions), tools };
}

/** What a live token grants: its owner, the minting key, its permissions and tools. */
export interface ActiveSandboxToken extends SandboxTokenOwner {
  tokenId: string;
  /** The minting key's id, or `console:<session id>` for a console preview's token. */
  keyId: string;
  /** The token's permissions, never more than the minting key still has. */
  permissions: Permission[];
  tools: SandboxToolName[];
}

/**
 * Resolves a presented token, or `undefined` when it is malformed, unknown, revoked, expired,
 * minted for another audience, or minted by a key that has since been revoked or deleted.
 * Nothing is cached: every request looks it up afresh, so every replica agrees at once.
 */
export async function findActiveSandboxToken(
  db: Kysely<DatabaseSchema>,
  token: string,
  expected: { audience: string; now?: number },
): Promise<ActiveSandboxToken | undefined> {
  if (!TOKEN_PATTERN.test(token)) return undefined;
  const now = expected.now ?? Date.now();
  const row = await db
    .selectFrom('sandbox_tokens')
    .leftJoin('api_keys', 'api_keys.id', 'sandbox_tokens.api_key_id')
    .leftJoin('console_sessions', 'console_sessions.id', 'sandbox_tokens.console_session_id')
    .select([
      'sandbox_tokens.id as id',
      'sandbox_tokens.tenant_id as tenant_id',
      'sandbox_tokens.agent_id as agent_id',
      'sandbox_tokens.user_id as user_id',
      'sandbox_tokens.api_key_id as api_key_id',
      'sandbox_tokens.console_session_id as console_session_id',
      'sandbox_tokens.audience as audience',
      'sandbox_tokens.permissions as permissions',
      'sandbox_tokens.tools as tools',
      'sandbox_tokens.expires_at as expires_at',
      'api_keys.permissions as key_permissions',
      'api_keys.agent_id as key_agent_id',
      'api_keys.revoked_at as key_revoked_at',
      'console_sessions.expires_at as session_expires_at',
    ])
    .where('sandbox_tokens.token_hash', '=', hashToken(token))
    .where('sandbox_tokens.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.audience !== expected.audience) return undefined;
  if (Number(row.expires_at) <= now) return undefined;
  let keyId: string;
  let issuerPermissions: Permission[];
  if (row.api_key_id !== null) {
    // The minting key must still exist, be live and belong to the token's agent.
    if (row.key_permissions === null || row.key_revoked_at !== null || row.key_agent_id !== row.agent_id) {
      return undefined;
    }
    keyId = row.api_key_id;
    issuerPermissions = parsePermissions(row.key_permissions);
  } else {
    // A console preview's token lives only as long as its (unexpired) session.
    if (row.console_session_id === null || row.session_expires_at === null) return undefined;
    if (Number(row.session_expires_at) <= now) return undefined;
    keyId = consoleSessionActor(row.console_session_id);
    issuerPermissions = parsePermissions(row.permissions);
  }
  return {
    tokenId: row.id,
    tenantId: row.tenant_id,
    agentId: row.agent_id,
    userId: row.user_id,
    keyId,
    permissions: parsePermissions(row.permissions).filter((permission) => issuerPermissions.includes(permission)),
    tools: row.tools === null ? [...SANDBOX_TOOL_NAMES] : canonicalTools(JSON.parse(row.tools) as SandboxToolName[]),
  };
}

/** Revokes one of the owner's tokens; revoking twice is a no-op. Another owner's id is 404, like a missing one. */
export async function revokeSandboxToken(
  db: Kysely<DatabaseSchema>,
  owner: SandboxTokenOwner,
  tokenId: string,
  now = Date.now(),
): Promise<void> {
  const existing = await db
    .selectFrom('sandbox_tokens')
    .select('id')
    .where('id', '=', tokenId)
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .executeTakeFirst();
  if (!existing) throw new ServiceError('NOT_FOUND', 'No such sandbox token.');
  await db
    .updateTable('sandbox_tokens')
    .set({ revoked_at: now })
    .where('id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every token of the owner (the user of this agent); returns how many were live. */
export async function revokeAllSandboxTokens(
  db: Kysely<DatabaseSchema>,
  owner: SandboxTokenOwner,
  now = Date.now(),
): Promise<number> {
  const result = await db
    .updateTable('sandbox_tokens')
    .set({ revoked_at: now })
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
