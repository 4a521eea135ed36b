import type { FileOwner } from '../../uploads/file-registry.js';
import type { SandboxBackend, WorkspaceMeasure } from '../backend.js';
import { findWorkspace } from '../workspaces.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A workspace's size against its limits and when retention deletes it, as the model (in
 * `sandbox_list_files`) and the user (`GET /v1/sandbox/usage`) see it. Numbers and one short
 * time only, so that a bounded tool result never has to cut it.
 */
export interface WorkspaceUsage {
  /** Bytes its files take; null when it could not be measured. */
  bytesUsed: number | null;
  /** The byte quota writes are checked against (`MORDN_SANDBOX_WORKSPACE_MAX_BYTES`). */
  quotaBytes: number;
  /** Files, directories and links it holds; null when it could not be measured. */
  fileCount: number | null;
  /** The most files its filesystem holds; null where no file limit is enforced (weak limits). */
  fileQuota: number | null;
  /** ISO time after which retention deletes it unless it is used again; null when retention is off. */
  deleteAfter: string | null;
}

/** The operator limits the figures are read against. */
export interface UsageLimits {
  workspaceMaxBytes: number;
  /** Idle days before deletion; 0 keeps workspaces forever. */
  retentionDays: number;
}

/** When retention may delete a workspace last used at `lastUsedAt` (epoch ms): null when it never does. */
export function retentionDeadline(lastUsedAt: number, retentionDays: number): string | null {
  return retentionDays === 0 ? null : new Date(lastUsedAt + retentionDays * DAY_MS).toISOString();
}

/**
 * Measures a workspace (one statfs with its own filesystem, a bounded walk otherwise) and reads
 * the figures against the limits. A failed measure gives null counts rather than failing the
 * caller: the limits and the deadline are still worth knowing.
 */
export async function measureWorkspaceUsage(
  backend: Pick<SandboxBackend, 'usage'>,
  workspaceId: string,
  options: { limits: UsageLimits; lastUsedAt: number; onError: (error: unknown) => void },
): Promise<{ usage: WorkspaceUsage; measure: WorkspaceMeasure | undefined }> {
  const { limits, lastUsedAt } = options;
  const measure = await backend.usage(workspaceId).catch((error: unknown) => {
    options.onError(error);
    return undefined;
  });
  return {
    usage: {
      bytesUsed: measure?.bytes ?? null,
      quotaBytes: limits.workspaceMaxBytes,
      fileCount: measure?.files ?? null,
      fileQuota: measure?.maxFiles ?? null,
      deleteAfter: retentionDeadline(lastUsedAt, limits.retentionDays),
    },
    measure,
  };
}

/** What `GET /v1/sandbox/usage` answers: null when the user has no workspace yet. */
export type UserWorkspaceUsage = { workspace: (WorkspaceUsage & { lastUsedAt: string }) | null };

/**
 * The caller's workspace usage for the user API: read-only, it provisions nothing (no record,
 * no storage, no sandbox use recorded) and answers `{ workspace: null }` when there is none yet.
 * `backend` is undefined when sandboxes are off on this service: an existing workspace cannot be
 * measured then, and `undefined` comes back for the caller to refuse.
 */
export async function readUserWorkspaceUsage(
  db: Parameters<typeof findWorkspace>[0],
  backend: Pick<SandboxBackend, 'usage'> | undefined,
  owner: FileOwner,
  options: { limits: UsageLimits; onError: (error: unknown) => void },
): Promise<UserWorkspaceUsage | undefined> {
  const workspace = await findWorkspace(db, owner);
  if (!workspace) return { workspace: null };
  if (!backend) return undefined;
  const { usage } = await measureWorkspaceUsage(backend, workspace.id, {
    limits: options.limits,
    lastUsedAt: workspace.lastUsedAt,
    onError: options.onError,
  });
  return { workspace: { lastUsedAt: new Date(workspace.lastUsedAt).toISOString(), ...usage } };
}
