import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { runPeriodically } from '../periodic.js';
import type { SandboxBackend } from './backend.js';
import { pruneRateLimitWindows } from './rate-limit.js';
import { deleteIdleWorkspaceRecord, findIdleWorkspaces } from './workspaces.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const BATCH = 100;

export interface RetentionDependencies {
  db: Kysely<DatabaseSchema>;
  backend: SandboxBackend;
  logger: Logger;
  /** Idle days before a workspace is deleted; 0 keeps workspaces forever. */
  retentionDays: number;
  now?: () => number;
}

/**
 * Deletes workspaces idle for longer than the retention period: first the files, then the
 * record — and the record only if nobody used the workspace meanwhile, so a call racing the
 * sweep keeps its workspace (its files are recreated empty, never half-deleted under it).
 * Published downloads live in separate storage and are not touched. Returns how many went.
 */
export async function sweepIdleWorkspaces(deps: RetentionDependencies): Promise<number> {
  const now = (deps.now ?? Date.now)();
  await pruneRateLimitWindows(deps.db, now - DAY_MS);
  if (deps.retentionDays === 0) return 0;
  const before = now - deps.retentionDays * DAY_MS;
  let removed = 0;
  for (;;) {
    const idle = await findIdleWorkspaces(deps.db, before, BATCH);
    if (idle.length === 0) return removed;
    for (const workspace of idle) {
      await deps.backend.removeWorkspace(workspace.id);
      if (await deleteIdleWorkspaceRecord(deps.db, workspace.id, before)) removed += 1;
      deps.logger.info(
        { workspaceId: workspace.id, lastUsedAt: new Date(workspace.lastUsedAt).toISOString() },
        'idle workspace deleted',
      );
    }
    if (idle.length < BATCH) return removed;
  }
}

/** Runs the sweep now and then every `intervalMs`, without keeping the process alive. */
export function startRetentionSweeper(deps: RetentionDependencies, intervalMs = 60 * 60 * 1000): () => void {
  return runPeriodically(
    () => sweepIdleWorkspaces(deps),
    intervalMs,
    (error) => deps.logger.error({ err: error }, 'workspace sweep failed'),
  );
}
