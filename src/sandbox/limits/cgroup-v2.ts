import path from 'node:path';
import {
  errorCode,
  fileExists,
  makeCgroupDirectory,
  readControlFile,
  readKeyedNumbers,
  readNumber,
  readProcesses,
  writeControlFile,
} from './cgroup-files.js';
import type { CgroupHierarchy } from './cgroup-hierarchy.js';
import { type CgroupLimits, CPU_PERIOD_MICROS, cpuQuotaMicros } from './cgroup-limits.js';
import { directoryInMount } from './cgroup-mounts.js';
import { ensureParent, type HierarchyContext, probeParent, unavailable } from './cgroup-parent.js';
import { createWorkspaceCgroup, type WorkspaceCgroupLayout, workingSet } from './workspace-cgroup.js';

/** The v2 controllers a workspace cgroup is limited by. */
const UNIFIED_CONTROLLERS = ['memory', 'cpu', 'pids'] as const;

/** The leaf our own processes move into when our cgroup must give up its processes to have children with controllers. */
const SERVICE_LEAF_NAME = 'service';

const words = (text: string) => text.split(/\s+/).filter(Boolean);

/**
 * Our own cgroup's directory in a cgroup2 mount below the root that offers memory, cpu and pids
 * to it, or the reason there is none. A cgroup2 mount without controllers (the `unified` mount of
 * a hybrid v1 host) is no reason to fail: v1 may still carry them.
 *
 * @example
 * const own = await findUnifiedOwnDirectory(context); // '/sys/fs/cgroup/system.slice/mordn.service'
 */
export async function findUnifiedOwnDirectory(context: HierarchyContext): Promise<string | { reason: string }> {
  const ownPath = context.ownCgroups.get('');
  const reasons: string[] = [];
  for (const mount of context.mounts.filter((candidate) => candidate.version === 2)) {
    const own = ownPath === undefined ? undefined : directoryInMount(mount, ownPath);
    if (!own) {
      reasons.push(`our cgroup ${ownPath ?? '(none)'} is not visible under the cgroup v2 mount ${mount.mountPoint}`);
      continue;
    }
    let controllers: string[];
    try {
      controllers = words(await readControlFile(path.join(own, 'cgroup.controllers')));
    } catch (error) {
      reasons.push(error instanceof Error ? error.message : String(error));
      continue;
    }
    const missing = UNIFIED_CONTROLLERS.filter((controller) => !controllers.includes(controller));
    if (missing.length === 0) return own;
    reasons.push(
      `the cgroup v2 hierarchy at ${mount.mountPoint} does not offer ${missing.join(', ')} to our cgroup ${ownPath} ` +
        `(cgroup.controllers: "${controllers.join(' ')}")`,
    );
  }
  return { reason: reasons.join('; ') };
}

/**
 * Opens cgroup v2 workspace cgroups below `<own>/mordn`, enabling memory, cpu and pids on the way
 * down. cgroup v2 lets a cgroup other than the root hand controllers to its children only while
 * it holds no processes itself, so when our own cgroup (a systemd unit with `Delegate=yes`, a
 * container's namespace root) holds ours, they first move into the leaf `<own>/service`.
 *
 * @example
 * const hierarchy = await openUnifiedHierarchy(context, '/sys/fs/cgroup/system.slice/mordn.service');
 */
export async function openUnifiedHierarchy(context: HierarchyContext, own: string): Promise<CgroupHierarchy> {
  if (!(await hasAllEnabled(own))) {
    // Only the real root has no cgroup.type; it alone may hold processes and enable controllers.
    if (await fileExists(path.join(own, 'cgroup.type'))) {
      const processes = await readProcesses(path.join(own, 'cgroup.procs')).catch(() => []);
      if (processes.length > 0) await moveIntoLeaf(own, processes, context.selfPid);
    }
    await enableControllers(own);
  }
  const parent = await ensureParent(own);
  if (!(await hasAllEnabled(parent))) await enableControllers(parent);
  await probeParent(parent, context.removal.removeDirectory);
  return {
    version: 2,
    directories: [parent],
    location: parent,
    create: (name, limits) => createWorkspaceCgroup(name, unifiedLayout(parent, name), limits, context.removal),
  };
}

async function hasAllEnabled(directory: string): Promise<boolean> {
  const enabled = words(await readControlFile(path.join(directory, 'cgroup.subtree_control')).catch(() => ''));
  return UNIFIED_CONTROLLERS.every((controller) => enabled.includes(controller));
}

async function enableControllers(directory: string): Promise<void> {
  const file = path.join(directory, 'cgroup.subtree_control');
  try {
    await writeControlFile(file, UNIFIED_CONTROLLERS.map((controller) => `+${controller}`).join(' '));
  } catch (error) {
    const busy = errorCode(error) === 'EBUSY' ? '(processes are still in that cgroup itself)' : undefined;
    throw unavailable(`cannot enable ${UNIFIED_CONTROLLERS.join(', ')} in ${file}`, error, busy);
  }
}

/** Moves our own process first, so it is out even if another one cannot be moved. */
async function moveIntoLeaf(own: string, processes: number[], selfPid: number): Promise<void> {
  const leaf = path.join(own, SERVICE_LEAF_NAME);
  const procsFile = path.join(leaf, 'cgroup.procs');
  try {
    await makeCgroupDirectory(leaf);
    await writeControlFile(procsFile, String(selfPid));
    for (const pid of processes.filter((candidate) => candidate !== selfPid)) {
      await writeControlFile(procsFile, String(pid)).catch((error: unknown) => {
        // It exited since cgroup.procs was read.
        if (errorCode(error) !== 'ESRCH') throw error;
      });
    }
  } catch (error) {
    throw unavailable(`cannot move the processes of ${own} into ${leaf}`, error);
  }
}

function unifiedLayout(parent: string, name: string): WorkspaceCgroupLayout {
  const directory = path.join(parent, name);
  const file = (control: string) => path.join(directory, control);
  return {
    directories: [directory],
    accountingDirectory: directory,
    killFile: file('cgroup.kill'),
    async applyLimits(limits: CgroupLimits) {
      await writeControlFile(file('memory.max'), String(limits.memoryBytes));
      // Without swap accounting (or without swap) the file is absent and there is nothing to escape into.
      if (await fileExists(file('memory.swap.max'))) await writeControlFile(file('memory.swap.max'), '0');
      // One process over the limit is killed, never the whole sandbox with it (kernels since 4.19).
      if (await fileExists(file('memory.oom.group'))) await writeControlFile(file('memory.oom.group'), '0');
      await writeControlFile(file('cpu.max'), `${cpuQuotaMicros(limits.cpus)} ${CPU_PERIOD_MICROS}`);
      await writeControlFile(file('pids.max'), String(limits.processes));
    },
    async oomKills() {
      return (await readKeyedNumbers(file('memory.events'))).get('oom_kill') ?? 0;
    },
    async cpuStat() {
      const stat = await readKeyedNumbers(file('cpu.stat'));
      return {
        periods: stat.get('nr_periods') ?? 0,
        throttled: stat.get('nr_throttled') ?? 0,
        throttledMicros: stat.get('throttled_usec'),
      };
    },
    memoryBytes: () => readNumber(file('memory.current')),
    workingSetBytes: async () =>
      workingSet(
        await readNumber(file('memory.current')),
        (await readKeyedNumbers(file('memory.stat'))).get('inactive_file'),
      ),
    async cpuSeconds() {
      const usage = (await readKeyedNumbers(file('cpu.stat'))).get('usage_usec');
      if (usage === undefined) throw new Error(`${file('cpu.stat')} has no usage_usec`);
      return usage / 1e6;
    },
  };
}
