import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Where per-sandbox pids cgroups go: `<our own cgroup>/mordn/`, so sandboxes still count against
 * any limit the service itself runs under (a systemd `TasksMax`, a container's pids limit).
 */
export interface PidsCgroupParent {
  version: 1 | 2;
  directory: string;
}

/** One sandbox's pids cgroup: a hard ceiling on its process count that no process inside can lift. */
export interface PidsCgroup {
  /** Moves a process into the cgroup; its later children are born inside. */
  add(pid: number): Promise<void>;
  /** Kills whatever is still inside, then removes the cgroup. Never throws. */
  remove(): Promise<void>;
}

const REMOVE_ATTEMPTS = 100;
const REMOVE_INTERVAL_MS = 20;

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/** `\040`-style escapes of /proc/self/mountinfo. */
function unescapeMountPath(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

interface CgroupMount {
  mountPoint: string;
  root: string;
  fsType: string;
  superOptions: string[];
}

function parseMountInfo(text: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const separator = fields.indexOf('-');
    if (separator < 0) continue;
    const [root, mountPoint] = [fields[3], fields[4]];
    const [fsType, , superOptions] = fields.slice(separator + 1);
    if (!root || !mountPoint || !fsType || (fsType !== 'cgroup' && fsType !== 'cgroup2')) continue;
    mounts.push({
      mountPoint: unescapeMountPath(mountPoint),
      root: unescapeMountPath(root),
      fsType,
      superOptions: (superOptions ?? '').split(','),
    });
  }
  return mounts;
}

/** Our cgroup's directory inside `mount`, or undefined when the mount does not contain it. */
function ownDirectory(mount: CgroupMount, ownPath: string): string | undefined {
  if (mount.root === '/') return path.join(mount.mountPoint, ownPath);
  if (ownPath === mount.root || ownPath.startsWith(`${mount.root}/`)) {
    return path.join(mount.mountPoint, ownPath.slice(mount.root.length));
  }
  return undefined;
}

async function ensureDirectory(directory: string): Promise<void> {
  await mkdir(directory).catch((error: unknown) => {
    if (errorCode(error) !== 'EEXIST') throw error;
  });
}

async function enablePidsController(directory: string): Promise<void> {
  const enabled = await readFile(path.join(directory, 'cgroup.subtree_control'), 'utf8');
  if (!enabled.split(/\s+/).includes('pids')) await writeFile(path.join(directory, 'cgroup.subtree_control'), '+pids');
}

/** Proves that a pids cgroup can be created (and limited) below `directory`, by making one. */
async function canCreateChild(directory: string): Promise<boolean> {
  const child = path.join(directory, `probe-${randomUUID()}`);
  try {
    await mkdir(child);
  } catch {
    return false;
  }
  try {
    await writeFile(path.join(child, 'pids.max'), '1');
    return true;
  } catch {
    return false;
  } finally {
    await rmdir(child).catch(() => undefined);
  }
}

async function unifiedParent(mounts: CgroupMount[], cgroups: string[]): Promise<PidsCgroupParent | undefined> {
  const mount = mounts.find((candidate) => candidate.fsType === 'cgroup2');
  const ownPath = cgroups.find((line) => line.startsWith('0::'))?.slice(3);
  const own = mount && ownPath !== undefined ? ownDirectory(mount, ownPath) : undefined;
  if (!own) return undefined;
  const controllers = await readFile(path.join(own, 'cgroup.controllers'), 'utf8');
  if (!controllers.split(/\s+/).includes('pids')) return undefined;
  const directory = path.join(own, 'mordn');
  // Fails (EBUSY) when our own cgroup holds processes and is not the root: cgroup v2 allows
  // controllers in a child only when the parent has no processes of its own.
  await enablePidsController(own);
  await ensureDirectory(directory);
  await enablePidsController(directory);
  return (await canCreateChild(directory)) ? { version: 2, directory } : undefined;
}

async function legacyParent(mounts: CgroupMount[], cgroups: string[]): Promise<PidsCgroupParent | undefined> {
  const mount = mounts.find((candidate) => candidate.fsType === 'cgroup' && candidate.superOptions.includes('pids'));
  const line = cgroups.find((candidate) => candidate.split(':')[1]?.split(',').includes('pids'));
  const ownPath = line?.split(':').slice(2).join(':');
  const own = mount && ownPath !== undefined ? ownDirectory(mount, ownPath) : undefined;
  if (!own) return undefined;
  const directory = path.join(own, 'mordn');
  await ensureDirectory(directory);
  return (await canCreateChild(directory)) ? { version: 1, directory } : undefined;
}

/**
 * Finds a pids cgroup hierarchy this process may create children in: cgroup v2 first (when it
 * offers the `pids` controller), then v1. Undefined when neither is writable, which is normal
 * for an unprivileged service; sandboxes then rely on `RLIMIT_NPROC` alone.
 */
export async function findPidsCgroupParent(): Promise<PidsCgroupParent | undefined> {
  let mounts: CgroupMount[];
  let cgroups: string[];
  try {
    mounts = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
    cgroups = (await readFile('/proc/self/cgroup', 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  for (const find of [unifiedParent, legacyParent]) {
    const parent = await find(mounts, cgroups).catch(() => undefined);
    if (parent) return parent;
  }
  return undefined;
}

/**
 * Creates a fresh pids cgroup allowing at most `maxProcesses` tasks (threads count too).
 *
 * @example
 * const cgroup = await createPidsCgroup(parent, 258);
 * await cgroup.add(child.pid);
 * // … once the sandbox has exited:
 * await cgroup.remove();
 */
export async function createPidsCgroup(parent: PidsCgroupParent, maxProcesses: number): Promise<PidsCgroup> {
  const directory = path.join(parent.directory, randomUUID());
  await mkdir(directory);
  try {
    await writeFile(path.join(directory, 'pids.max'), String(maxProcesses));
  } catch (error) {
    await rmdir(directory).catch(() => undefined);
    throw error;
  }
  const procsFile = path.join(directory, 'cgroup.procs');

  const killMembers = async (): Promise<boolean> => {
    const members = (await readFile(procsFile, 'utf8')).split('\n').filter(Boolean).map(Number);
    for (const pid of members) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    return members.length > 0;
  };

  return {
    async add(pid) {
      await writeFile(procsFile, String(pid));
    },
    async remove() {
      if (parent.version === 2) await writeFile(path.join(directory, 'cgroup.kill'), '1').catch(() => undefined);
      for (let attempt = 0; attempt < REMOVE_ATTEMPTS; attempt += 1) {
        try {
          if (!(await killMembers())) {
            await rmdir(directory);
            return;
          }
        } catch (error) {
          if (errorCode(error) === 'ENOENT') return;
        }
        await delay(REMOVE_INTERVAL_MS);
      }
    },
  };
}
