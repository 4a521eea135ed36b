import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { errorCode, makeCgroupDirectory } from './cgroup-files.js';
import type { CgroupMount } from './cgroup-mounts.js';
import type { RemoveDirectory } from './cgroup-removal.js';
import { CgroupUnavailableError } from './cgroup-unavailable-error.js';
import type { RemovalSettings } from './workspace-cgroup.js';

/** The child of our own cgroup that holds every workspace cgroup. */
const PARENT_NAME = 'mordn';

/** What `openCgroupHierarchy` found out about this host, handed to the v1 and v2 openers. */
export interface HierarchyContext {
  root: string;
  /** The cgroup mounts at or below `root`. */
  mounts: CgroupMount[];
  /** Our own cgroup path per v1 controller, and under `''` for v2. */
  ownCgroups: Map<string, string>;
  selfPid: number;
  removal: RemovalSettings;
}

const PERMISSION_HINT = '(the service needs root or a delegated cgroup v2 subtree)';

/**
 * A CgroupUnavailableError for a step that failed, with the errno and then `hint` or, for a
 * permission problem, what the service needs.
 *
 * @example
 * throw unavailable(`cannot create cgroups below ${own}`, error);
 */
export function unavailable(message: string, error: unknown, hint?: string): CgroupUnavailableError {
  const code = errorCode(error);
  const reason = code ?? (error instanceof Error ? error.message : String(error));
  const permission = code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? PERMISSION_HINT : undefined;
  const explanation = hint ?? permission;
  return new CgroupUnavailableError(`${message}: ${reason}${explanation ? ` ${explanation}` : ''}`, { cause: error });
}

/**
 * Creates `<own>/mordn` (or adopts it from an earlier run) and returns its path; workspace
 * cgroups go below it, so any limit on the service itself still contains its sandboxes.
 *
 * @example
 * const parent = await ensureParent('/sys/fs/cgroup/system.slice/mordn.service');
 */
export async function ensureParent(own: string): Promise<string> {
  const parent = path.join(own, PARENT_NAME);
  try {
    await makeCgroupDirectory(parent);
  } catch (error) {
    throw unavailable(`cannot create cgroups below ${own}`, error);
  }
  return parent;
}

/**
 * Proves that cgroups can be created and removed below `parent` by doing it once, so a missing
 * permission shows when the service starts rather than when the first sandbox does. The probe's
 * name starts with a dot, which no workspace name can.
 *
 * @example
 * await probeParent(parent, removeCgroupDirectory);
 */
export async function probeParent(parent: string, removeDirectory: RemoveDirectory): Promise<void> {
  const probe = path.join(parent, `.probe-${randomUUID()}`);
  try {
    await makeCgroupDirectory(probe);
  } catch (error) {
    throw unavailable(`cannot create cgroups below ${parent}`, error);
  }
  try {
    await removeDirectory(probe);
  } catch (error) {
    throw unavailable(`cannot remove cgroup ${probe}`, error);
  }
}
