import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { createId } from '../ids.js';
import { getTenant } from '../tenancy/tenants.js';

type Db = Kysely<DatabaseSchema>;

/** A sandbox tool call as it is recorded once it ran: one row per call. */
export interface ToolCallRecord {
  tenantId: string;
  agentId: string;
  userId: string;
  tool: string;
  startedAt: number;
  durationMs: number;
  ok: boolean;
}

/** Appends the record of one tool call. */
export async function recordToolCall(db: Db, call: ToolCallRecord): Promise<void> {
  await db
    .insertInto('tool_calls')
    .values({
      id: createId('toolCall'),
      tenant_id: call.tenantId,
      agent_id: call.agentId,
      user_id: call.userId,
      tool: call.tool,
      started_at: call.startedAt,
      duration_ms: Math.max(0, Math.round(call.durationMs)),
      outcome: call.ok ? 'ok' : 'failed',
    })
    .execute();
}

/** A tenant's figures over `[from, to)`. */
export interface TenantUsage {
  tenantId: string;
  /** ISO 8601, inclusive. */
  from: string;
  /** ISO 8601, exclusive. */
  to: string;
  /** Sandbox tool calls that ran (refused calls are not counted), failed ones included. */
  toolCalls: number;
  /** Wall-clock seconds of `sandbox_exec` calls. */
  execSeconds: number;
  /** Bytes of the uploads and artifacts stored in the range that are still kept. */
  bytesStored: number;
  /** Conversations started in the range that are still stored. */
  chats: number;
  /** Artifact downloads served or redirected (refusals of revoked files are not counted). */
  downloads: number;
}

const count = (row: { value: number | string | null } | undefined) => Number(row?.value ?? 0);

/**
 * A tenant's usage over `[from, to)` (epoch ms), summed in the database. Throws 404 for an
 * unknown tenant.
 */
export async function readTenantUsage(db: Db, tenantId: string, from: number, to: number): Promise<TenantUsage> {
  await getTenant(db, tenantId);
  const calls = await db
    .selectFrom('tool_calls')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('value'),
      eb.fn
        .sum<number | string | null>(
          eb.case().when('tool', '=', 'sandbox_exec').then(eb.ref('duration_ms')).else(0).end(),
        )
        .as('execMs'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('started_at', '>=', from)
    .where('started_at', '<', to)
    .executeTakeFirst();
  const stored = await db
    .selectFrom('stored_files')
    .select((eb) => eb.fn.sum<number | string | null>('size').as('value'))
    .where('tenant_id', '=', tenantId)
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .executeTakeFirst();
  const chats = await db
    .selectFrom('chats')
    .select((eb) => eb.fn.countAll<number | string>().as('value'))
    .where('tenant_id', '=', tenantId)
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .executeTakeFirst();
  const downloads = await db
    .selectFrom('artifact_downloads')
    .select((eb) => eb.fn.countAll<number | string>().as('value'))
    .where('tenant_id', '=', tenantId)
    .where('downloaded_at', '>=', from)
    .where('downloaded_at', '<', to)
    .where('status', '<>', 404)
    .executeTakeFirst();
  return {
    tenantId,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    toolCalls: count(calls),
    execSeconds: Number(calls?.execMs ?? 0) / 1000,
    bytesStored: count(stored),
    chats: count(chats),
    downloads: count(downloads),
  };
}
