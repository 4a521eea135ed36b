import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { createId } from '../ids.js';
import { type Permission, parsePermissions, serializePermissions } from './permissions.js';

const KEY_PREFIX = 'mordn_';
/** `mordn_` followed by 32 random bytes in base64url. */
const KEY_PATTERN = /^mordn_[A-Za-z0-9_-]{43}$/;
/**
 * Matches a key, or a sandbox token (`mordn_mcp_` + 43, see `sandbox-tokens.ts`), anywhere in a
 * text, for scrubbing logs and tool output. The token's longer form is tried first, so no tail
 * of a token is left behind.
 */
export const API_KEY_PATTERN = /mordn_(?:mcp_)?[A-Za-z0-9_-]{43}/g;

export function isWellFormedApiKey(candidate: string): boolean {
  return KEY_PATTERN.test(candidate);
}

/** Keys carry 256 random bits, so a fast hash is enough and lets us look them up by hash. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export interface CreatedApiKey {
  id: string;
  /** The full key: returned once, never stored. */
  key: string;
  permissions: Permission[];
}

export interface ApiKeySummary {
  id: string;
  prefix: string;
  permissions: Permission[];
  createdAt: string;
  revokedAt: string | null;
}

/** Issues a key for an agent. Throws 404 when the agent does not exist. */
export async function createApiKey(
  db: Kysely<DatabaseSchema>,
  agentId: string,
  permissions: readonly Permission[],
): Promise<CreatedApiKey> {
  const agent = await db.selectFrom('agents').select(['id', 'tenant_id']).where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new ServiceError('NOT_FOUND', 'No such agent.');
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = createId('apiKey');
  const stored = serializePermissions(permissions);
  await db
    .insertInto('api_keys')
    .values({
      id,
      tenant_id: agent.tenant_id,
      agent_id: agent.id,
      key_hash: hashApiKey(key),
      key_prefix: key.slice(0, KEY_PREFIX.length + 6),
      permissions: stored,
      created_at: Date.now(),
      revoked_at: null,
    })
    .execute();
  return { id, key, permissions: parsePermissions(stored) };
}

/** Revokes a key; revoking twice is a no-op. Throws 404 for an unknown key. */
export async function revokeApiKey(db: Kysely<DatabaseSchema>, keyId: string): Promise<void> {
  const existing = await db.selectFrom('api_keys').select('id').where('id', '=', keyId).executeTakeFirst();
  if (!existing) throw new ServiceError('NOT_FOUND', 'No such API key.');
  await db
    .updateTable('api_keys')
    .set({ revoked_at: Date.now() })
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Key metadata for an agent (never the key or its hash). Throws 404 for an unknown agent. */
export async function listApiKeys(db: Kysely<DatabaseSchema>, agentId: string): Promise<ApiKeySummary[]> {
  const agent = await db.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new ServiceError('NOT_FOUND', 'No such agent.');
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'key_prefix', 'permissions', 'created_at', 'revoked_at'])
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    prefix: row.key_prefix,
    permissions: parsePermissions(row.permissions),
    createdAt: new Date(row.created_at).toISOString(),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at).toISOString(),
  }));
}

export interface ActiveApiKey {
  keyId: string;
  tenantId: string;
  agentId: string;
  permissions: Permission[];
}

/** Resolves a presented key to its agent, or `undefined` when unknown or revoked. */
export async function findActiveApiKey(db: Kysely<DatabaseSchema>, key: string): Promise<ActiveApiKey | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'agent_id', 'permissions'])
    .where('key_hash', '=', hashApiKey(key))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    keyId: row.id,
    tenantId: row.tenant_id,
    agentId: row.agent_id,
    permissions: parsePermissions(row.permissions),
  };
}
