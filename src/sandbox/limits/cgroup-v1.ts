import path from 'node:path';
import { fileExists, readKeyedNumbers, readNumber, writeControlFile } from './cgroup-files.js';
import type { CgroupHierarchy } from './cgroup-hierarchy.js';
import { type CgroupLimits, CPU_PERIOD_MICROS, cpuQuotaMicros } from './cgroup-limits.js';
import { directoryInMount } from './cgroup-mounts.js';
import { ensureParent, type HierarchyContext, probeParent } from './cgroup-parent.js';
import { createWorkspaceCgroup, type WorkspaceCgroupLayout, workingSet } from './workspace-cgroup.js';

/**
 * The v1 controllers a workspace cgroup is made in. cpuacct counts the CPU time its processes
 * used (for metering); it is usually co-mounted with cpu (`cpu,cpuacct`), but may be a hierarchy
 * of its own, and then the workspace gets a cgroup there too.
 */
const LEGACY_CONTROLLERS = ['memory', 'cpu', 'pids', 'cpuacct'] as const;

type LegacyController = (typeof LEGACY_CONTROLLERS)[number];

/** Our own cgroup's directory in each needed v1 hierarchy. */
export type LegacyOwnDirectories = Record<LegacyController, string>;

/**
 * Our own cgroup's directory in the memory, cpu, pids and cpuacct v1 hierarchies mounted below the root,
 * or the reason one of them cannot be used.
 *
 * @example
 * const own = findLegacyOwnDirectories(context);
 * if ('reason' in own) throw new CgroupUnavailableError(own.reason);
 */
export function findLegacyOwnDirectories(context: HierarchyContext): LegacyOwnDirectories | { reason: string } {
  const found: Partial<LegacyOwnDirectories> = {};
  for (const controller of LEGACY_CONTROLLERS) {
    const mounts = context.mounts.filter((mount) => mount.version === 1 && mount.controllers.includes(controller));
    if (mounts.length === 0) return { reason: `the ${controller} controller is not mounted under ${context.root}` };
    const ownPath = context.ownCgroups.get(controller);
    if (ownPath === undefined) return { reason: `/proc/self/cgroup names no ${controller} cgroup for this process` };
    // A hierarchy can be mounted more than once; any mount that shows our own cgroup will do.
    const directory = mounts.map((mount) => directoryInMount(mount, ownPath)).find((candidate) => candidate);
    if (!directory) {
      return { reason: `our ${controller} cgroup ${ownPath} is not visible under ${mounts[0]?.mountPoint}` };
    }
    found[controller] = directory;
  }
  return found as LegacyOwnDirectories;
}

/**
 * Opens cgroup v1 workspace cgroups below `<own>/mordn` in each of memory, cpu, pids and cpuacct
 * (one directory where two are co-mounted).
 *
 * @example
 * const hierarchy = await openLegacyHierarchy(context, own);
 * const cgroup = await hierarchy.create('ws_0123abc', limits);
 */
export async function openLegacyHierarchy(
  context: HierarchyContext,
  own: LegacyOwnDirectories,
): Promise<CgroupHierarchy> {
  const parents = {} as LegacyOwnDirectories;
  for (const controller of LEGACY_CONTROLLERS) parents[controller] = await ensureParent(own[controller]);
  // Co-mounted controllers (`cpu,pids`, rare) share one directory.
  const unique = [...new Set(Object.values(parents))];
  for (const parent of unique) await probeParent(parent, context.removal.removeDirectory);
  return {
    version: 1,
    directories: unique,
    location: unique.join(', '),
    create: (name, limits) => createWorkspaceCgroup(name, legacyLayout(parents, name), limits, context.removal),
  };
}

function legacyLayout(parents: LegacyOwnDirectories, name: string): WorkspaceCgroupLayout {
  const memory = path.join(parents.memory, name);
  const cpu = path.join(parents.cpu, name);
  const pids = path.join(parents.pids, name);
  const cpuacct = path.join(parents.cpuacct, name);
  return {
    directories: [...new Set([memory, cpu, pids, cpuacct])],
    accountingDirectory: cpuacct,
    async applyLimits(limits: CgroupLimits) {
      await applyMemoryLimit(memory, limits.memoryBytes);
      await writeControlFile(path.join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_MICROS));
      await writeControlFile(path.join(cpu, 'cpu.cfs_quota_us'), String(cpuQuotaMicros(limits.cpus)));
      await writeControlFile(path.join(pids, 'pids.max'), String(limits.processes));
    },
    async oomKills() {
      // Kernels before 4.13 have no `oom_kill` line.
      return (await readKeyedNumbers(path.join(memory, 'memory.oom_control'))).get('oom_kill') ?? 0;
    },
    async cpuStat() {
      const stat = await readKeyedNumbers(path.join(cpu, 'cpu.stat'));
      const throttledNanos = stat.get('throttled_time');
      return {
        periods: stat.get('nr_periods') ?? 0,
        throttled: stat.get('nr_throttled') ?? 0,
        throttledMicros: throttledNanos === undefined ? undefined : Math.floor(throttledNanos / 1_000),
      };
    },
    memoryBytes: () => readNumber(path.join(memory, 'memory.usage_in_bytes')),
    workingSetBytes: async () =>
      workingSet(
        await readNumber(path.join(memory, 'memory.usage_in_bytes')),
        (await readKeyedNumbers(path.join(memory, 'memory.stat'))).get('total_inactive_file'),
      ),
    // Nanoseconds of CPU time charged to every process that was ever in the cgroup.
    cpuSeconds: async () => (await readNumber(path.join(cpuacct, 'cpuacct.usage'))) / 1e9,
  };
}

/**
 * Sets RAM and RAM+swap to the same amount, so no process escapes the limit into swap. The kernel
 * insists on memsw ≥ limit at every step, so the order depends on whether the limit goes up or down.
 * The memsw file exists only when swap accounting is on; the OOM killer stays enabled either way.
 */
async function applyMemoryLimit(directory: string, bytes: number): Promise<void> {
  const limitFile = path.join(directory, 'memory.limit_in_bytes');
  const swapFile = path.join(directory, 'memory.memsw.limit_in_bytes');
  if (!(await fileExists(swapFile))) {
    await writeControlFile(limitFile, String(bytes));
    return;
  }
  const raising = bytes > (await readNumber(limitFile));
  const order = raising ? [swapFile, limitFile] : [limitFile, swapFile];
  for (const file of order) await writeControlFile(file, String(bytes));
}
