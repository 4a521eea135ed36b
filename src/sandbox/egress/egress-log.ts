import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../../db/schema.js';
import { createId } from '../../ids.js';
import type { Page } from '../../pagination/cursor.js';
import { keysetPage, type PageRequest, toPage } from '../../pagination/keyset.js';
import type { RefusalReason } from './effective-policy.js';

type Db = Kysely<DatabaseSchema>;

/** Identical refusals this close together share one row (a refusal loop cannot flood the log). */
export const COLLAPSE_WINDOW_MS = 10_000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Who a decision was about: the workspace's owner. */
export interface EgressOwner {
  tenantId: string;
  agentId: string;
  userId: string;
  workspaceId: string;
}

/** One decision of the egress proxy, as recorded. */
export interface EgressDecision {
  owner: EgressOwner;
  /** When the connection was asked for. */
  at: number;
  host: string;
  port: number;
  address: string | null;
  decision: 'allowed' | 'refused';
  reason: RefusalReason | null;
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
}

/** A row of `GET /v1/admin/tenants/:tenantId/egress`. */
export interface EgressLogEntry {
  at: string;
  agentId: string;
  userId: string;
  workspaceId: string;
  host: string;
  port: number;
  address: string | null;
  decision: 'allowed' | 'refused';
  reason: RefusalReason | null;
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
  count: number;
}

/**
 * Records egress decisions. An allowed connection is one row, written when it closes (with its
 * bytes and duration). A refusal is a row too, but one identical to a refusal recorded by this
 * process less than `COLLAPSE_WINDOW_MS` before (same workspace, host, port, address and
 * reason) only adds to that row's `count`.
 */
export function createEgressLog(db: Db, now: () => number = Date.now) {
  const recent = new Map<string, { id: string; at: number }>();

  const forget = (at: number) => {
    for (const [key, entry] of recent) if (at - entry.at >= COLLAPSE_WINDOW_MS) recent.delete(key);
  };

  return {
    async record(decision: EgressDecision): Promise<void> {
      if (decision.decision === 'refused') {
        const at = now();
        forget(at);
        const key = JSON.stringify([
          decision.owner.workspaceId,
          decision.host,
          decision.port,
          decision.address,
          decision.reason,
        ]);
        const previous = recent.get(key);
        if (previous) {
          const updated = await db
            .updateTable('egress_log')
            .set((eb) => ({ count: eb('count', '+', 1) }))
            .where('id', '=', previous.id)
            .executeTakeFirst();
          if (Number(updated.numUpdatedRows) > 0) return;
        }
        const id = createId('egressDecision');
        recent.set(key, { id, at });
        await insert(db, id, decision);
        return;
      }
      await insert(db, createId('egressDecision'), decision);
    },
  };
}

async function insert(db: Db, id: string, decision: EgressDecision): Promise<void> {
  await db
    .insertInto('egress_log')
    .values({
      id,
      at: decision.at,
      tenant_id: decision.owner.tenantId,
      agent_id: decision.owner.agentId,
      user_id: decision.owner.userId,
      workspace_id: decision.owner.workspaceId,
      host: decision.host,
      port: decision.port,
      address: decision.address,
      decision: decision.decision,
      reason: decision.reason,
      bytes_up: decision.bytesUp,
      bytes_down: decision.bytesDown,
      duration_ms: decision.durationMs,
    })
    .execute();
}

function toEntry(
  row: DatabaseSchema['egress_log'] & { count: number; bytes_up: number; bytes_down: number; duration_ms: number },
): EgressLogEntry {
  return {
    at: new Date(Number(row.at)).toISOString(),
    agentId: row.agent_id,
    userId: row.user_id,
    workspaceId: row.workspace_id,
    host: row.host,
    port: Number(row.port),
    address: row.address,
    decision: row.decision === 'allowed' ? 'allowed' : 'refused',
    reason: (row.reason as RefusalReason | null) ?? null,
    bytesUp: Number(row.bytes_up),
    bytesDown: Number(row.bytes_down),
    durationMs: Number(row.duration_ms),
    count: Number(row.count),
  };
}

/** One page of a tenant's egress decisions, newest first (the row id breaking ties). */
export async function listTenantEgress(db: Db, tenantId: string, page: PageRequest): Promise<Page<EgressLogEntry>> {
  const query = db.selectFrom('egress_log').selectAll().where('tenant_id', '=', tenantId);
  const rows = await keysetPage(query, { at: 'at', key: 'id', direction: 'desc' }, page).execute();
  return toPage(
    rows,
    page.limit,
    (row) => ({ at: Number(row.at), key: row.id }),
    (row) => toEntry(row as never),
  );
}

/** Deletes decisions older than `retentionDays` (0 keeps them forever); returns how many. */
export async function sweepEgressLog(db: Db, retentionDays: number, now = Date.now()): Promise<number> {
  if (retentionDays === 0) return 0;
  const result = await db
    .deleteFrom('egress_log')
    .where('at', '<', now - retentionDays * DAY_MS)
    .executeTakeFirst();
  await db
    .deleteFrom('egress_usage')
    .where('day', '<', new Date(now - Math.max(retentionDays, 2) * DAY_MS).toISOString().slice(0, 10))
    .execute();
  return Number(result.numDeletedRows);
}
