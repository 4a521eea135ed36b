import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AdminAuditTable, DatabaseSchema } from '../db/schema.js';
import { createId } from '../ids.js';
import type { Page } from '../pagination/cursor.js';
import { keysetPage, type PageRequest, toPage } from '../pagination/keyset.js';

type Db = Kysely<DatabaseSchema>;

/**
 * Who made an admin write: the bearer of the admin token (named by a digest, never the token) or
 * a console session.
 */
export type AdminActor = `admin:${string}` | `console:${string}`;

/** `admin:` and the first 12 hex characters of sha256(token): stable per token, useless to replay. */
export function adminTokenActor(adminToken: string): AdminActor {
  return `admin:${createHash('sha256').update(adminToken).digest('hex').slice(0, 12)}`;
}

/** The actor of a write made through a signed-in console session. */
export function consoleSessionActor(sessionId: string): AdminActor {
  return `console:${sessionId}`;
}

/** One admin write as it is recorded: what was asked of which target, and how it was answered. */
export interface AdminWrite {
  actor: AdminActor;
  method: string;
  /** The matched route pattern, e.g. `/v1/admin/agents/:agentId/keys`. */
  route: string;
  /** The path parameters, e.g. `{ agentId: 'agt_…' }`. */
  target: Record<string, string>;
  requestId: string;
  /** The HTTP status of the answer. */
  status: number;
}

/** An audit row as `GET /v1/admin/audit` answers it. */
export interface AdminAuditEntry extends AdminWrite {
  id: string;
  /** ISO 8601: when the write was answered. */
  at: string;
  outcome: 'ok' | 'failed';
}

/**
 * Appends one row. The log is append-only: nothing in the service updates or deletes its rows.
 * Bodies are never part of a row (a key issue's answer holds the new key).
 */
export async function appendAdminWrite(db: Db, write: AdminWrite, at = Date.now()): Promise<void> {
  await db
    .insertInto('admin_audit')
    .values({
      id: createId('auditEntry'),
      at,
      actor: write.actor,
      method: write.method,
      route: write.route,
      target: JSON.stringify(write.target),
      request_id: write.requestId,
      status: write.status,
      outcome: write.status < 400 ? 'ok' : 'failed',
    })
    .execute();
}

function toEntry(row: AdminAuditTable): AdminAuditEntry {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    actor: row.actor as AdminActor,
    method: row.method,
    route: row.route,
    target: JSON.parse(row.target) as Record<string, string>,
    requestId: row.request_id,
    status: row.status,
    outcome: row.outcome === 'ok' ? 'ok' : 'failed',
  };
}

/** One page of the audit log, newest first (the row id breaking ties within a millisecond). */
export async function listAdminAudit(db: Db, page: PageRequest): Promise<Page<AdminAuditEntry>> {
  const query = db.selectFrom('admin_audit').selectAll();
  const rows = await keysetPage(query, { at: 'at', key: 'id', direction: 'desc' }, page).execute();
  return toPage(rows, page.limit, (row) => ({ at: row.at, key: row.id }), toEntry);
}
