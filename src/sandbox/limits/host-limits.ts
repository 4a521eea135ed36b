import type { WorkspaceMeasure } from '../backend.js';
import { type CgroupHierarchy, openCgroupHierarchy } from './cgroups.js';
import { createQuotaFilesystems, defaultMaxFiles, type QuotaFilesystems } from './quota-filesystem.js';

/** The workspace quota of a backend given none: 1 GiB, and files as `MORDN_SANDBOX_WORKSPACE_MAX_FILES` defaults. */
export const DEFAULT_WORKSPACE_QUOTA: Readonly<{ maxBytes: number; maxFiles: number }> = {
  maxBytes: 1024 ** 3,
  maxFiles: defaultMaxFiles(1024 ** 3),
};

/**
 * The host cannot enforce a sandbox limit: sandboxes are unavailable, and the message (which
 * names the capability and the fix, never a secret) is what `/readyz` shows.
 */
export class HostLimitUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HostLimitUnavailableError';
  }
}

/** What a backend asks of the host: a workspace quota always, cgroups when it places processes itself. */
export interface HostLimitsOptions {
  /** Host directory of the workspaces' filesystems (images and mount points). */
  workspacesDir: string;
  quota: { maxBytes: number; maxFiles: number };
  /** Owner of each workspace filesystem's root: the host user sandboxes run as. */
  owner?: { uid: number; gid: number };
  /** Per-workspace cgroups are needed (bwrap); Docker's own container cgroups serve otherwise. */
  cgroups: false | { root?: string };
  /**
   * `MORDN_SANDBOX_WEAK_LIMITS`: run even where the host cannot hold a limit, holding it per
   * process (rlimits) or after the fact instead. Never covers seccomp.
   */
  weakLimits: boolean;
}

/** The host's enforcement as found; a missing part is only possible with `weakLimits`. */
export interface HostLimits {
  cgroups?: CgroupHierarchy;
  quota?: QuotaFilesystems;
}

/**
 * Finds what this host can enforce for sandboxes as a whole: a cgroup hierarchy for memory, CPU
 * and processes, and per-workspace quota filesystems. Each one that is missing fails the whole
 * (the message says why, for `/readyz`), unless the operator chose weak limits.
 *
 * @example
 * const host = await prepareHostLimits({ workspacesDir, quota: { maxBytes, maxFiles }, cgroups: {}, weakLimits: false });
 */
export async function prepareHostLimits(options: HostLimitsOptions): Promise<HostLimits> {
  const allowWeak = (what: string, error: unknown) => {
    if (options.weakLimits) return;
    const reason = error instanceof Error ? error.message : String(error);
    throw new HostLimitUnavailableError(`${what}: ${reason} (or set MORDN_SANDBOX_WEAK_LIMITS=true)`, { cause: error });
  };
  let cgroups: CgroupHierarchy | undefined;
  if (options.cgroups) {
    try {
      cgroups = await openCgroupHierarchy(options.cgroups.root === undefined ? {} : { root: options.cgroups.root });
    } catch (error) {
      allowWeak('memory, CPU and process limits per workspace need cgroups', error);
    }
  }
  let quota: QuotaFilesystems | undefined;
  try {
    const candidate = createQuotaFilesystems({
      directory: options.workspacesDir,
      maxBytes: options.quota.maxBytes,
      maxFiles: options.quota.maxFiles,
      ...(options.owner ? { owner: options.owner } : {}),
    });
    await candidate.probe();
    quota = candidate;
  } catch (error) {
    allowWeak('the workspace disk quota needs a filesystem per workspace', error);
  }
  return { ...(cgroups ? { cgroups } : {}), ...(quota ? { quota } : {}) };
}

/**
 * Bytes and files of a workspace: what its own filesystem counts when it has one (one statfs,
 * with the file limit it enforces), otherwise `walk` (the file helper's sum over a plain
 * directory, under weak limits, where no file limit applies).
 *
 * @example
 * usage: (id) => workspaceUsage((await host()).quota, id, fileOperations.usage),
 */
export async function workspaceUsage(
  quota: QuotaFilesystems | undefined,
  workspaceId: string,
  walk: (workspaceId: string) => Promise<WorkspaceMeasure>,
): Promise<WorkspaceMeasure> {
  if (quota && (await quota.existing(workspaceId))) {
    const { bytes, files, maxFiles } = await quota.usage(workspaceId);
    return { bytes, files, maxFiles };
  }
  return walk(workspaceId);
}
