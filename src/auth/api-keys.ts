import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { createId } from '../ids.js';
import type { Page } from '../pagination/cursor.js';
import { keysetPage, type PageRequest, toPage } from '../pagination/keyset.js';
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

/** A key as the admin API lists it: metadata only, never the key or its hash. */
export interface ApiKeySummary {
  id: string;
  /** The key's first characters, for recognising it. */
  prefix: string;
  permissions: Permission[];
  createdAt: string;
  /** When it last authenticated a request, to the minute; null if never. */
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** How often a key's `last_used_at` is written at most: authentication stays read-only otherwise. */
export const KEY_USE_RESOLUTION_MS = 60_000;

const isoOrNull = (epochMs: number | null) => (epochMs === null ? null : new Date(epochMs).toISOString());

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
      last_used_at: null,
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

/**
 * One page of an agent's key metadata, oldest first (never the key or its hash). Throws 404 for
 * an unknown agent.
 */
export async function listApiKeys(
  db: Kysely<DatabaseSchema>,
  agentId: string,
  page: PageRequest,
): Promise<Page<ApiKeySummary>> {
  const agent = await db.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new ServiceError('NOT_FOUND', 'No such agent.');
  const query = db
    .selectFrom('api_keys')
    .select(['id', 'key_prefix', 'permissions', 'created_at', 'last_used_at', 'revoked_at'])
    .where('agent_id', '=', agentId);
  const rows = await keysetPage(query, { at: 'created_at', key: 'id', direction: 'asc' }, page).execute();
  return toPage(
    rows,
    page.limit,
    (row) => ({ at: row.created_at, key: row.id }),
    (row) => ({
      id: row.id,
      prefix: row.key_prefix,
      permissions: parsePermissions(row.permissions),
      createdAt: new Date(row.created_at).toISOString(),
      lastUsedAt: isoOrNull(row.last_used_at),
      revokedAt: isoOrNull(row.revoked_at),
    }),
  );
}

export interface ActiveApiKey {
  keyId: string;
  tenantId: string;
  agentId: string;
  permissions: Permission[];
  /** Epoch ms of the last recorded use, or null. */
  lastUsedAt: number | null;
}

/** Resolves a presented key to its agent, or `undefined` when unknown or revoked. */
export async function findActiveApiKey(db: Kysely<DatabaseSchema>, key: string): Promise<ActiveApiKey | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'agent_id', 'permissions', 'last_used_at'])
    .where('key_hash', '=', hashApiKey(key))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    keyId: row.id,
    tenantId: row.tenant_id,
    agentId: row.agent_id,
    permissions: parsePermissions(row.permissions),
    lastUsedAt: row.last_used_at,
  };
}

/** Whether a key last used at `lastUsedAt` is due a new `last_used_at` at `now`. */
export function isKeyUseStale(lastUsedAt: number | null, now: number): boolean {
  return lastUsedAt === null || now - lastUsedAt >= KEY_USE_RESOLUTION_MS;
}

/**
 * Records that a key authenticated a request at `now`. Callers skip it while the recorded use is
 * fresh (`isKeyUseStale`), so a busy key costs one write a minute; the condition keeps replicas
 * that race from moving the time backwards or writing twice.
 */
export async function recordApiKeyUse(db: Kysely<DatabaseSchema>, keyId: string, now: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', keyId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - KEY_USE_RESOLUTION_MS)]))
    .execute();
}
