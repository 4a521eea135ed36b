import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { HttpMetrics } from '../metrics.js';
import { type CursorPosition, decodeCursor, encodeCursor, type Page } from '../pagination/cursor.js';
import type { FileOwner } from '../uploads/file-registry.js';

type Db = Kysely<DatabaseSchema>;

const DAY_MS = 24 * 60 * 60 * 1000;

/** Audit statuses besides the HTTP ones: the client went away before the last byte. */
export const CLIENT_CLOSED = 499;

/** One download (or redirect, or refusal of a revoked file) of a published file. */
export interface DownloadRecord {
  id: string;
  storagePath: string;
  tenantId: string;
  agentId: string;
  /** The user the link was minted for: the artifact's owner. */
  userId: string;
  downloadedAt: string;
  clientIp: string | null;
  userAgent: string | null;
  status: number;
  bytes: number | null;
}

/** What the download route knows about one download when it ends. */
export interface DownloadEvent {
  storagePath: string;
  owner: FileOwner;
  at: number;
  clientIp: string | null;
  userAgent: string | null;
  status: number;
  bytes: number | null;
}

export interface DownloadAuditDependencies {
  db: Db;
  logger: Logger;
  metrics: HttpMetrics;
}

/** User agents are client-chosen: kept, but bounded. */
const MAX_USER_AGENT = 512;

/**
 * Records a download. Called once the response is settled (the last byte sent, the client gone,
 * or the redirect answered), and not awaited by the route: the bytes never wait on the database.
 * A failed write is logged (never thrown into a response that has already been sent).
 */
export function recordDownload(deps: DownloadAuditDependencies, event: DownloadEvent): Promise<void> {
  deps.metrics.observeArtifactDownload(event.status);
  return deps.db
    .insertInto('artifact_downloads')
    .values({
      id: `dl_${randomBytes(12).toString('hex')}`,
      storage_path: event.storagePath,
      tenant_id: event.owner.tenantId,
      agent_id: event.owner.agentId,
      user_id: event.owner.userId,
      downloaded_at: event.at,
      client_ip: event.clientIp,
      user_agent: event.userAgent === null ? null : event.userAgent.slice(0, MAX_USER_AGENT),
      status: event.status,
      bytes: event.bytes,
    })
    .execute()
    .then(
      () => undefined,
      (error: unknown) => {
        deps.logger.error({ err: error, storagePath: event.storagePath }, 'download audit write failed');
      },
    );
}

function toRecord(row: DatabaseSchema['artifact_downloads']): DownloadRecord {
  return {
    id: row.id,
    storagePath: row.storage_path,
    tenantId: row.tenant_id,
    agentId: row.agent_id,
    userId: row.user_id,
    downloadedAt: new Date(row.downloaded_at).toISOString(),
    clientIp: row.client_ip,
    userAgent: row.user_agent,
    status: row.status,
    bytes: row.bytes === null ? null : Number(row.bytes),
  };
}

/**
 * One page of the download records of one of the owner's artifacts, newest first (record id
 * breaking ties). Rows outlive a deleted artifact until retention removes them.
 */
export async function listDownloads(
  db: Db,
  owner: FileOwner,
  storagePath: string,
  page: { limit: number; cursor?: string },
): Promise<Page<DownloadRecord>> {
  const after: CursorPosition | undefined = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  let query = db
    .selectFrom('artifact_downloads')
    .selectAll()
    .where('storage_path', '=', storagePath)
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId);
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('downloaded_at', '<', after.at),
        eb.and([eb('downloaded_at', '=', after.at), eb('id', '<', after.key)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('downloaded_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .execute();
  const items = rows.slice(0, page.limit).map(toRecord);
  const last = rows[page.limit - 1];
  return {
    items,
    nextCursor: rows.length > page.limit && last ? encodeCursor({ at: last.downloaded_at, key: last.id }) : null,
  };
}

/** Whether the owner has any download record of `storagePath` (a deleted artifact's included). */
export async function hasDownloads(db: Db, owner: FileOwner, storagePath: string): Promise<boolean> {
  const row = await db
    .selectFrom('artifact_downloads')
    .select('id')
    .where('storage_path', '=', storagePath)
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Deletes download records older than `retentionDays` (0 keeps them forever); returns how many
 * went. The service runs it hourly, and the download route at most hourly per process as new records arrive.
 */
export async function sweepDownloadAudit(db: Db, retentionDays: number, now = Date.now()): Promise<number> {
  if (retentionDays === 0) return 0;
  const result = await db
    .deleteFrom('artifact_downloads')
    .where('downloaded_at', '<', now - retentionDays * DAY_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
