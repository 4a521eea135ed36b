import { rmdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { errorCode, fileExists, readProcesses, writeControlFile } from './cgroup-files.js';

/** How one cgroup directory is removed: `rmdir` on cgroupfs, where its control files go with it. */
export type RemoveDirectory = (directory: string) => Promise<void>;

/**
 * The default `RemoveDirectory`: plain `rmdir`, which cgroupfs allows once no process is inside.
 *
 * @example
 * await removeCgroupDirectory('/sys/fs/cgroup/mordn/ws_1');
 */
export const removeCgroupDirectory: RemoveDirectory = (directory) => rmdir(directory);

const RETRY_INTERVAL_MS = 20;

/**
 * The pids in any of `directories` (one per v1 controller, or the single v2 directory), each
 * once, in ascending order. A directory that is gone has no members.
 *
 * @example
 * await readMembers(['/sys/fs/cgroup/memory/mordn/ws_1', '/sys/fs/cgroup/pids/mordn/ws_1']); // → [4242]
 */
export async function readMembers(directories: readonly string[]): Promise<number[]> {
  const members = new Set<number>();
  for (const directory of directories) {
    const pids = await readProcesses(path.join(directory, 'cgroup.procs')).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    });
    for (const pid of pids) members.add(pid);
  }
  return [...members].sort((left, right) => left - right);
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/**
 * Kills every process in `directories` and removes them, retrying until `timeoutMs` has passed:
 * processes may fork while they are being killed, and a killed process holds its cgroup busy
 * until its parent has reaped it. Resolves true once every directory is gone, false when time ran
 * out; never rejects.
 *
 * With `killFile` (v2's cgroup.kill, when the kernel has it) the kernel kills the whole cgroup
 * at once, forks included; without it the loop's SIGKILLs do, and a pid read from cgroup.procs
 * is signalled only moments later, which is what v1 without a freezer allows.
 *
 * @example
 * await killAndRemove([directory], { killFile: `${directory}/cgroup.kill`, removeDirectory: removeCgroupDirectory, timeoutMs: 5_000 });
 */
export async function killAndRemove(
  directories: readonly string[],
  options: { killFile?: string; removeDirectory: RemoveDirectory; timeoutMs: number },
): Promise<boolean> {
  const deadline = Date.now() + options.timeoutMs;
  let remaining = [...directories];
  try {
    if (options.killFile && (await fileExists(options.killFile))) {
      await writeControlFile(options.killFile, '1').catch(() => undefined);
    }
    for (;;) {
      const members = await readMembers(remaining).catch(() => []);
      for (const pid of members) killQuietly(pid);
      if (members.length === 0) remaining = await removeEach(remaining, options.removeDirectory);
      if (remaining.length === 0) return true;
      if (Date.now() >= deadline) return false;
      await delay(RETRY_INTERVAL_MS);
    }
  } catch {
    return false;
  }
}

/** The directories still there after one removal attempt each. */
async function removeEach(directories: string[], removeDirectory: RemoveDirectory): Promise<string[]> {
  const left: string[] = [];
  for (const directory of directories) {
    try {
      await removeDirectory(directory);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') left.push(directory);
    }
  }
  return left;
}
