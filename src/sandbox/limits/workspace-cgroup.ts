import { stat } from 'node:fs/promises';
import path from 'node:path';
import { makeCgroupDirectory, writeControlFile } from './cgroup-files.js';
import { assertValidCgroupName, assertValidLimits, type CgroupLimits } from './cgroup-limits.js';
import { killAndRemove, type RemoveDirectory, readMembers } from './cgroup-removal.js';

/** CFS bandwidth counters of a workspace cgroup, cumulative since it was created. */
export interface CpuStatistics {
  /** Enforcement periods that have elapsed while processes inside were runnable. */
  periods: number;
  /** Periods in which the quota ran out and the processes had to wait. */
  throttled: number;
  /** Total time spent throttled, in microseconds. */
  throttledMicros?: number;
}

/** What a workspace cgroup has used, for metering (see `WorkspaceCgroup.resources`). */
export interface CgroupResources {
  /** CPU time of every process that was ever in the cgroup, exited ones included. */
  cpuSeconds: number;
  /** Memory charged to the cgroup now, less the inactive page cache (as `docker stats` counts). */
  memoryBytes: number;
  /** Names this cgroup: a cgroup of the same name made again later has another. */
  instance: string;
  /** When the cgroup was made (epoch ms): a later instance has a later one. */
  startedAt: number;
}

/** One workspace's cgroup: every process of its sandbox, limited and counted together. */
export interface WorkspaceCgroup {
  /** The workspace id it was created under. */
  readonly name: string;
  /** Its directories: one per controller on cgroup v1, the single one on v2. */
  readonly directories: readonly string[];
  /** Moves a process (all its threads) into the cgroup in every controller; its later children are born inside. */
  add(pid: number): Promise<void>;
  /** Applies new limits to the running cgroup, for an operator who changed them. */
  setLimits(limits: CgroupLimits): Promise<void>;
  /** How many processes inside the kernel's OOM killer has killed, cumulative; 0 on kernels that do not count. */
  oomKills(): Promise<number>;
  /** CFS bandwidth counters: how often the CPU quota held processes back. */
  cpuStat(): Promise<CpuStatistics>;
  /** Memory charged to the cgroup now, page cache included. */
  memoryBytes(): Promise<number>;
  /** Pids of every process inside, ascending. */
  members(): Promise<number[]>;
  /** Cumulative CPU time and current memory, with the identity of this cgroup (its counters start at 0). */
  resources(): Promise<CgroupResources>;
  /**
   * Kills every process inside and removes the directories. Never rejects and gives up after a
   * bounded time, leaving a cgroup that the next `create` of the same name adopts.
   */
  remove(): Promise<void>;
}

/** What differs between cgroup v1 and v2 for one workspace cgroup. */
export interface WorkspaceCgroupLayout {
  directories: readonly string[];
  /** v2's cgroup.kill, used when the kernel offers it. */
  killFile?: string;
  applyLimits(limits: CgroupLimits): Promise<void>;
  oomKills(): Promise<number>;
  cpuStat(): Promise<CpuStatistics>;
  memoryBytes(): Promise<number>;
  /** `memoryBytes` less the inactive file cache the kernel can drop at once. */
  workingSetBytes(): Promise<number>;
  /** CPU time of every process ever inside (v1 cpuacct.usage, v2 cpu.stat usage_usec). */
  cpuSeconds(): Promise<number>;
  /** The directory whose identity (inode and change time) names the cgroup's CPU counter. */
  accountingDirectory: string;
}

/**
 * Memory in use less the inactive file cache, as `docker stats` shows a container's; the usage
 * as it is where the cgroup reports no such cache.
 *
 * @example
 * workingSet(10_000, 4_000); // → 6000
 */
export function workingSet(usage: number, inactiveFile: number | undefined): number {
  return inactiveFile !== undefined && inactiveFile < usage ? usage - inactiveFile : usage;
}

/** How a hierarchy removes cgroups (tests replace `removeDirectory` on a fake tree of plain files). */
export interface RemovalSettings {
  removeDirectory: RemoveDirectory;
  timeoutMs: number;
}

/**
 * Creates (or adopts, when a directory is left from an earlier run) the directories of `layout`
 * and applies `limits`. When that fails, the directories made by this call are removed again
 * before the error is rethrown; adopted ones are left as they were found.
 *
 * @example
 * const cgroup = await createWorkspaceCgroup('ws_1', unifiedLayout(parent, 'ws_1'), limits, removal);
 */
export async function createWorkspaceCgroup(
  name: string,
  layout: WorkspaceCgroupLayout,
  limits: CgroupLimits,
  removal: RemovalSettings,
): Promise<WorkspaceCgroup> {
  assertValidCgroupName(name);
  assertValidLimits(limits);
  const created: string[] = [];
  try {
    for (const directory of layout.directories) {
      if (await makeCgroupDirectory(directory)) created.push(directory);
    }
    await layout.applyLimits(limits);
  } catch (error) {
    await killAndRemove(created, { ...removal, killFile: undefined });
    throw error;
  }
  return {
    name,
    directories: layout.directories,
    async add(pid) {
      for (const directory of layout.directories) {
        await writeControlFile(path.join(directory, 'cgroup.procs'), String(pid));
      }
    },
    async setLimits(next) {
      assertValidLimits(next);
      await layout.applyLimits(next);
    },
    oomKills: () => layout.oomKills(),
    cpuStat: () => layout.cpuStat(),
    memoryBytes: () => layout.memoryBytes(),
    members: () => readMembers(layout.directories),
    async resources() {
      // The directory's inode and change time: a cgroup removed and made again gets new ones,
      // one adopted from an earlier run (its counter still running) keeps them.
      const found = await stat(layout.accountingDirectory, { bigint: true });
      const startedAt = Number(found.ctimeNs / 1_000_000n);
      const [cpuSeconds, memoryBytes] = await Promise.all([layout.cpuSeconds(), layout.workingSetBytes()]);
      return { cpuSeconds, memoryBytes, instance: `${found.ino}-${found.ctimeNs}`, startedAt };
    },
    async remove() {
      await killAndRemove(layout.directories, { ...removal, killFile: layout.killFile });
    },
  };
}
