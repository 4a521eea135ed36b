import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readKeyedNumbers } from './cgroup-files.js';
import { directoryInMount, parseCgroupMounts, parseOwnCgroups } from './cgroup-mounts.js';

/**
 * Reads how many processes the OOM killer has killed in the memory cgroup of host process
 * `pid` (a Docker container's, found through its supervisor): `oom_kill` of memory.oom_control
 * on cgroup v1, of memory.events on v2. Undefined when this host cannot see that cgroup (the
 * daemon runs elsewhere, or /sys/fs/cgroup shows another namespace).
 *
 * @example
 * const count = await processOomCounter(supervisorHostPid);
 * const before = await count?.();
 */
export async function processOomCounter(pid: number): Promise<(() => Promise<number>) | undefined> {
  try {
    const own = parseOwnCgroups(await readFile(`/proc/${pid}/cgroup`, 'utf8'));
    const mounts = parseCgroupMounts(await readFile('/proc/self/mountinfo', 'utf8'));
    const legacy = mounts.find((mount) => mount.version === 1 && mount.controllers.includes('memory'));
    const legacyPath = own.get('memory');
    if (legacy && legacyPath !== undefined) {
      const directory = directoryInMount(legacy, legacyPath);
      if (directory) return counter(path.join(directory, 'memory.oom_control'));
    }
    const unified = mounts.find((mount) => mount.version === 2);
    const unifiedPath = own.get('');
    if (unified && unifiedPath !== undefined) {
      const directory = directoryInMount(unified, unifiedPath);
      if (directory) return counter(path.join(directory, 'memory.events'));
    }
  } catch {
    // The process is gone, or its cgroup is not visible from here.
  }
  return undefined;
}

async function counter(file: string): Promise<(() => Promise<number>) | undefined> {
  const read = async () => (await readKeyedNumbers(file)).get('oom_kill') ?? 0;
  return (await read().then(
    () => true,
    () => false,
  ))
    ? read
    : undefined;
}
