import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { errorCode } from './cgroup-files.js';
import type { CgroupHierarchy } from './cgroup-hierarchy.js';
import { isAtOrBelow, parseCgroupMounts, parseOwnCgroups } from './cgroup-mounts.js';
import type { HierarchyContext } from './cgroup-parent.js';
import { type RemoveDirectory, removeCgroupDirectory } from './cgroup-removal.js';
import { CgroupUnavailableError } from './cgroup-unavailable-error.js';
import { findLegacyOwnDirectories, openLegacyHierarchy } from './cgroup-v1.js';
import { findUnifiedOwnDirectory, openUnifiedHierarchy } from './cgroup-v2.js';

export type { CgroupHierarchy } from './cgroup-hierarchy.js';
export type { CgroupLimits } from './cgroup-limits.js';
export type { RemoveDirectory } from './cgroup-removal.js';
export { CgroupUnavailableError } from './cgroup-unavailable-error.js';
export type { CgroupResources, CpuStatistics, WorkspaceCgroup } from './workspace-cgroup.js';

/** Where to look for cgroups; everything but `root` exists for tests on a fake tree. */
export interface OpenCgroupHierarchyOptions {
  /** Only cgroup mounts at or below this directory count (`MORDN_SANDBOX_CGROUP_ROOT`). Default `/sys/fs/cgroup`. */
  root?: string;
  /** The text of /proc/self/mountinfo, read from there by default. */
  mountInfo?: string;
  /** The text of /proc/self/cgroup, read from there by default. */
  selfCgroup?: string;
  /** Our own pid, which moves into the `service` leaf of a delegated v2 subtree. Default `process.pid`. */
  selfPid?: number;
  /** Removes one cgroup directory. Default `rmdir`, which on cgroupfs takes the control files with it. */
  removeDirectory?: RemoveDirectory;
  /** How long `WorkspaceCgroup.remove` keeps killing and retrying. Default 5 s. */
  removeTimeoutMs?: number;
}

const DEFAULT_ROOT = '/sys/fs/cgroup';
const DEFAULT_REMOVE_TIMEOUT_MS = 5_000;

async function readProcText(given: string | undefined, file: string): Promise<string> {
  if (given !== undefined) return given;
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new CgroupUnavailableError(`cannot read ${file}: ${errorCode(error) ?? String(error)}`, { cause: error });
  }
}

async function assertRootDirectory(root: string): Promise<void> {
  const found = await stat(root).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') throw new CgroupUnavailableError(`cgroup root ${root} does not exist`);
    throw new CgroupUnavailableError(`cannot read cgroup root ${root}: ${errorCode(error) ?? String(error)}`);
  });
  if (!found.isDirectory()) throw new CgroupUnavailableError(`cgroup root ${root} is not a directory`);
}

/**
 * Finds where this service can create per-workspace cgroups limiting memory, CPU and process
 * count, and prepares `<own cgroup>/mordn` there. cgroup v2 is used when a cgroup2 mount below
 * the root offers memory, cpu and pids; otherwise v1, which needs memory, cpu, pids and cpuacct
 * mounted below the root (cpu may be co-mounted as `cpu,cpuacct`). Creating and removing a probe cgroup proves
 * the service may write there.
 *
 * @throws CgroupUnavailableError saying exactly why there is no usable hierarchy.
 * @example
 * const hierarchy = await openCgroupHierarchy({ root: config.sandbox.cgroupRoot });
 * const cgroup = await hierarchy.create('ws_0123abc', { memoryBytes: 512 * 1024 ** 2, cpus: 0.5, processes: 260 });
 * await cgroup.add(sandbox.pid);
 * // … when the workspace goes idle:
 * await cgroup.remove();
 */
export async function openCgroupHierarchy(options: OpenCgroupHierarchyOptions = {}): Promise<CgroupHierarchy> {
  const root = path.resolve(options.root ?? DEFAULT_ROOT);
  await assertRootDirectory(root);
  const mounts = parseCgroupMounts(await readProcText(options.mountInfo, '/proc/self/mountinfo')).filter((mount) =>
    isAtOrBelow(mount.mountPoint, root),
  );
  const context: HierarchyContext = {
    root,
    mounts,
    ownCgroups: parseOwnCgroups(await readProcText(options.selfCgroup, '/proc/self/cgroup')),
    selfPid: options.selfPid ?? process.pid,
    removal: {
      removeDirectory: options.removeDirectory ?? removeCgroupDirectory,
      timeoutMs: options.removeTimeoutMs ?? DEFAULT_REMOVE_TIMEOUT_MS,
    },
  };
  if (mounts.length === 0) throw new CgroupUnavailableError(`no cgroup filesystem is mounted under ${root}`);

  const reasons: string[] = [];
  if (mounts.some((mount) => mount.version === 2)) {
    const unified = await findUnifiedOwnDirectory(context);
    if (typeof unified === 'string') return openUnifiedHierarchy(context, unified);
    reasons.push(unified.reason);
  }
  if (mounts.some((mount) => mount.version === 1)) {
    const legacy = findLegacyOwnDirectories(context);
    if (!('reason' in legacy)) return openLegacyHierarchy(context, legacy);
    reasons.push(legacy.reason);
  }
  throw new CgroupUnavailableError(reasons.join('; '));
}
