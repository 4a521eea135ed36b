import { randomUUID } from 'node:crypto';
import { rmdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import type { FinalReading, SandboxBackend } from '../backend.js';
import type { CgroupLimits, WorkspaceCgroup } from '../limits/cgroups.js';
import {
  DEFAULT_WORKSPACE_QUOTA,
  type HostLimits,
  HostLimitUnavailableError,
  prepareHostLimits,
  workspaceUsage,
} from '../limits/host-limits.js';
import { seccompFilter } from '../limits/seccomp.js';
import { fileHelperSource, type StartHelper, workspaceFileOperations } from '../runtime/file-operations.js';
import { lazily } from '../runtime/lazily.js';
import { explainLimits } from '../runtime/limit-notices.js';
import { DEFAULT_PROCESS_LIMITS, HELPER_OPEN_FILES, resolveLimits } from '../runtime/limits.js';
import { OutputCapture } from '../runtime/output-capture.js';
import { checkExecOptions, runCommand } from '../runtime/run-command.js';
import { requireWorkspaceId } from '../runtime/workspace-path.js';
import type { CommandLimits } from '../supervisor/supervisor-connection.js';
import { createSupervisorPool } from '../supervisor/supervisor-pool.js';
import { supervisorSource } from '../supervisor/supervisor-source.js';
import type { TunnelStream } from '../supervisor/tunnel-stream.js';
import {
  detectHostLayout,
  HELPER_PATH,
  type HostLayout,
  type SandboxLimits,
  WORKSPACE_MOUNT,
} from './bwrap-arguments.js';
import { describeSpawnFailure, describeStartFailure } from './probe-failure.js';
import { type HostUser, launchSandbox } from './run-sandboxed.js';
import { createWarmSandboxes, type WarmSandbox } from './warm-sandboxes.js';
import { createWorkspaceDirectories } from './workspace-directories.js';
import { startWorkspaceSandbox } from './workspace-sandbox.js';

export type { SandboxLimits } from './bwrap-arguments.js';
export type { HostUser } from './run-sandboxed.js';

/** Limits of one workspace's sandbox: the shared process limits plus its CPU share. */
export interface BwrapLimits extends SandboxLimits {
  /** CPUs the workspace's processes may use together (a CFS quota), e.g. 0.5. */
  cpus: number;
}

/** Options of `createBwrapBackend`; only `workspacesDir` is required. */
export interface BwrapBackendOptions {
  /**
   * Receives each connection sandboxed code opens to its way out (the supervisor's proxy
   * listener), with its workspace: the egress proxy. Without it every such connection is closed.
   */
  onTunnel?: (workspaceId: string, tunnel: TunnelStream) => void;
  /** Host directory holding each workspace's filesystem; created when missing. */
  workspacesDir: string;
  /** Gets the workspace cgroup's last reading before a sandbox stops (see `FinalReading`). */
  onFinalReading?: FinalReading;
  /** The bubblewrap executable (looked up on `PATH` unless absolute). Default `bwrap`. */
  bwrapPath?: string;
  /** Limits of each workspace; each defaults as documented on `DEFAULT_LIMITS`. */
  limits?: Partial<BwrapLimits>;
  /** The workspace disk quota (its own filesystem): bytes and files. Default 1 GiB, 65,536 files. */
  quota?: { maxBytes: number; maxFiles: number };
  /** The Python 3 that runs the supervisor and file helper inside, and builds the seccomp filter. Default `/usr/bin/python3`. */
  python?: string;
  /**
   * The unprivileged host user sandboxes run as when the service runs as root (ignored otherwise:
   * they then run as the service's own user). Default 65534 (`nobody`); a dedicated uid is better
   * on a shared host. Never 0: a sandbox mapped to host root could write global sysctls in
   * /proc/sys and is exempt from RLIMIT_NPROC.
   */
  hostUser?: HostUser;
  /** Where cgroup filesystems are mounted (`MORDN_SANDBOX_CGROUP_ROOT`). Default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** Run where the host cannot hold per-workspace cgroups or quotas, with per-process limits instead. */
  weakLimits?: boolean;
  /** A workspace sandbox with no command for this long is torn down. Default 5 min. */
  idleMs?: number;
  /**
   * Sandboxes kept running over empty spare filesystems, so that a new workspace's first call
   * finds its sandbox up (`MORDN_SANDBOX_WARM_SANDBOXES`). Each costs its idle processes (about
   * 10 MiB) and one mounted spare image. Default 0; needs cgroups and quota filesystems.
   */
  warmSandboxes?: number;
  /** Told why the warm pool could not start a sandbox ahead of need (it retries by itself). */
  onWarning?: (message: string) => void;
}

/** The limits a backend gets unless its options lower or raise them. */
export const DEFAULT_LIMITS: Readonly<BwrapLimits> = { ...DEFAULT_PROCESS_LIMITS, cpus: 1 };

const DEFAULT_HOST_USER: HostUser = { uid: 65534, gid: 65534 };
const DEFAULT_IDLE_MS = 5 * 60_000;
/** CPU seconds granted beyond an exec's wall-clock timeout (the timeout is what normally stops it). */
const CPU_GRACE_SECONDS = 5;
/** CPU seconds of one file operation (the helper mostly waits on I/O). */
const HELPER_CPU_SECONDS = 120;
/** Tasks of a workspace beyond its commands' own: the supervisor, a reaper per running command and two idle ones. */
const SUPERVISOR_TASKS = 1 + 32;
const PROBE_TIMEOUT_MS = 15_000;
/** A sandbox waiting for a workspace is replaced after this long (the leftover sweep spares 2 h). */
const WARM_MAX_AGE_MS = 60 * 60_000;
const WARM_RETRY_MS = 30_000;
/** A taken warm sandbox's replacement waits this long: longer than most first calls take. */
const WARM_REFILL_DELAY_MS = 250;
const REMOVE_TIMEOUT_MS = 120_000;
/** Empties a workspace from inside a sandbox, so no host-side walk can be turned by a symlink. */
const CLEAR_WORKSPACE = `chmod -R u+rwX ${WORKSPACE_MOUNT} 2>/dev/null; find ${WORKSPACE_MOUNT} -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +`;

function resolveHostUser(requested: HostUser | undefined): HostUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = requested ?? DEFAULT_HOST_USER;
  if (!Number.isSafeInteger(user.uid) || !Number.isSafeInteger(user.gid) || user.uid <= 0 || user.gid <= 0) {
    throw new TypeError('hostUser must name a non-root uid and gid.');
  }
  return user;
}

/**
 * The embedded sandbox backend: one long-lived bubblewrap sandbox per active workspace, whose
 * supervisor (PID 1 inside) forks every command and file operation on request.
 *
 * What protects what:
 * - Namespaces and mounts: no network, no host files beyond read-only `/usr` and a few /etc
 *   entries, no other workspace, no capabilities; the environment holds five fixed variables.
 * - seccomp (`limits/seccomp.ts`): no keyrings, BPF, perf, userfaultfd, mounts, namespaces,
 *   ptrace, io_uring or TIOCSTI; no bwrap sandbox starts without the filter.
 * - Host user: a root service only stages the sandbox and runs its bwrap as `hostUser` (see
 *   `stagingPrefix`), so sandboxed code is never host root.
 * - One cgroup per workspace (`limits/cgroups.ts`): memory, CPU and processes of all its
 *   processes together; the OOM killer acts inside the workspace only and spares the supervisor.
 * - One filesystem per workspace (`limits/quota-filesystem.ts`): bytes and files bounded by the
 *   kernel, whatever the command does.
 * - Killing: each command runs under a reaper of the supervisor's (one command at a time), which
 *   kills everything the command started (however it detached) when it ends, times out or is
 *   aborted.
 * - File operations run `fileops.py` inside the sandbox, walking paths without following symlinks.
 *
 * Where the host cannot provide cgroups or quota filesystems, `probe` fails saying why, unless
 * `weakLimits` is set: then memory and processes are per-process rlimits and the quota is
 * checked after the fact.
 *
 * @example
 * const backend = createBwrapBackend({ workspacesDir: path.join(config.dataDir, 'workspaces') });
 * await backend.probe();
 * await backend.ensureWorkspace('ws_0123');
 * const result = await backend.exec('ws_0123', { command: 'python3 -V', timeoutMs: 10_000, maxOutputBytes: 65_536 });
 */
export function createBwrapBackend(options: BwrapBackendOptions): SandboxBackend {
  const limits = resolveLimits(DEFAULT_LIMITS, options.limits, ['cpus']);
  const quotaLimits = options.quota ?? DEFAULT_WORKSPACE_QUOTA;
  const bwrapPath = options.bwrapPath ?? 'bwrap';
  const python = options.python ?? '/usr/bin/python3';
  const hostUser = resolveHostUser(options.hostUser);
  const workspacesDir = path.resolve(options.workspacesDir);
  const directories = createWorkspaceDirectories(workspacesDir, hostUser);
  const layout = lazily<HostLayout>(detectHostLayout);
  const seccomp = lazily(() => seccompFilter({ python }));
  let hostPrepared = false;
  const host = lazily<HostLimits>(() => {
    hostPrepared = true;
    return prepareHostLimits({
      workspacesDir,
      quota: quotaLimits,
      ...(hostUser ? { owner: hostUser } : {}),
      cgroups: options.cgroupRoot === undefined ? {} : { root: options.cgroupRoot },
      weakLimits: options.weakLimits ?? false,
    });
  });
  const cgroupLimits: CgroupLimits = {
    memoryBytes: limits.memoryBytes,
    cpus: limits.cpus,
    processes: limits.processes + SUPERVISOR_TASKS,
  };
  /** Cgroups of the running workspace sandboxes. */
  const cgroups = new Map<string, WorkspaceCgroup>();

  /** What the cgroup counted since the last reading, handed over before it goes. */
  const finalReading = async (workspaceId: string, cgroup: WorkspaceCgroup) => {
    const { onFinalReading } = options;
    if (!onFinalReading) return;
    const resources = await cgroup.resources().catch(() => undefined);
    if (resources) await onFinalReading(workspaceId, resources).catch(() => undefined);
  };

  /** The existing workspace's directory: its own mounted filesystem, or (weak limits) a plain directory. */
  const workspaceDirectory = async (workspaceId: string): Promise<string> => {
    const { quota } = await host();
    if (!quota) return directories.existing(workspaceId);
    const mounted = await quota.existing(workspaceId);
    if (!mounted) throw new Error(`Workspace ${workspaceId} does not exist; ensureWorkspace creates it.`);
    return mounted;
  };

  /** Per-command rlimits; memory and processes are per process only where no cgroup holds them. */
  const commandLimits = (base: { openFiles: number; cpuSeconds: number }, weak: boolean): CommandLimits => ({
    nofile: base.openFiles,
    fsize: limits.fileSizeBytes,
    cpu: base.cpuSeconds,
    core: 0,
    ...(weak ? { as: limits.memoryBytes, nproc: limits.processes } : {}),
  });

  /** Starts a workspace sandbox (and its cgroup, named `cgroupName`) over `directory`. */
  const startSandbox = async (directory: string, cgroupName: string, background = false) => {
    const [hostLimits, filter, helper, supervisor] = await Promise.all([
      host(),
      seccomp(),
      fileHelperSource(),
      supervisorSource(),
    ]);
    const cgroup = await hostLimits.cgroups?.create(cgroupName, cgroupLimits);
    try {
      const sandbox = await startWorkspaceSandbox({
        bwrapPath,
        layout: await layout(),
        workspaceDirectory: directory,
        tmpBytes: limits.tmpBytes,
        python,
        supervisor,
        helper,
        seccomp: filter,
        ...(hostUser ? { hostUser } : {}),
        ...(cgroup ? { cgroup } : {}),
        background,
      });
      return {
        cgroup,
        foreground: sandbox.foreground,
        connection: sandbox.connection,
        stop: async () => {
          await sandbox.stop();
          for (const [workspaceId, known] of cgroups) {
            if (known !== cgroup) continue;
            cgroups.delete(workspaceId);
            await finalReading(workspaceId, cgroup);
          }
          await cgroup?.remove();
        },
      };
    } catch (error) {
      await cgroup?.remove();
      throw error;
    }
  };

  const pool = createSupervisorPool({
    ...(options.onTunnel ? { onTunnel: options.onTunnel } : {}),
    idleMs: options.idleMs ?? DEFAULT_IDLE_MS,
    start: async (workspaceId) => {
      const started = await startSandbox(await workspaceDirectory(workspaceId), workspaceId);
      if (started.cgroup) cgroups.set(workspaceId, started.cgroup);
      return started;
    },
  });

  const warm = createWarmSandboxes({
    size: options.warmSandboxes ?? 0,
    maxAgeMs: WARM_MAX_AGE_MS,
    retryMs: WARM_RETRY_MS,
    refillDelayMs: WARM_REFILL_DELAY_MS,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    make: async (): Promise<WarmSandbox> => {
      const { quota } = await host();
      if (!quota) throw new Error('sandboxes started ahead of need need quota filesystems');
      const spare = await quota.mountSpare();
      try {
        const started = await startSandbox(spare.mountPoint, `warm-${randomUUID()}`, true);
        return { spare, supervisor: started, ...(started.cgroup ? { cgroup: started.cgroup } : {}) };
      } catch (error) {
        await spare.discard();
        throw error;
      }
    },
  });

  /** Creates the workspace's filesystem, over which a warm sandbox (when one is ready) already runs. */
  const ensureWithWarmSandbox = async (workspaceId: string): Promise<void> => {
    const { quota } = await host();
    if (!quota) {
      await directories.ensure(workspaceId);
      return;
    }
    let taken: WarmSandbox | undefined;
    const adopt = async () => {
      taken = await warm.take();
      return taken?.spare;
    };
    try {
      await quota.ensure(workspaceId, { adopt });
    } catch (error) {
      await taken?.supervisor.stop();
      throw error;
    }
    if (!taken) return;
    taken.supervisor.foreground();
    if (taken.cgroup) cgroups.set(workspaceId, taken.cgroup);
    await pool.adopt(workspaceId, taken.supervisor);
  };

  /** Fails when the workspace does not exist; one with its sandbox up does (removal stops it first). */
  const requireWorkspace = async (workspaceId: string): Promise<void> => {
    if (!pool.isRunning(workspaceId)) await workspaceDirectory(workspaceId);
  };

  const fileHelper = async (workspaceId: string): Promise<StartHelper> => {
    await requireWorkspace(workspaceId);
    const weak = !(await host()).cgroups;
    const helperLimits = commandLimits(
      { openFiles: Math.max(limits.openFiles, HELPER_OPEN_FILES), cpuSeconds: HELPER_CPU_SECONDS },
      weak,
    );
    return (helperArguments, { stdin }) =>
      pool.spawn(workspaceId, [python, '-I', '-S', HELPER_PATH, ...helperArguments], {
        stdin,
        limits: helperLimits,
      });
  };

  /** Runs a service-side shell command to completion in a one-off sandbox over `directory`. */
  const runOnce = async (directory: string, command: string, timeoutMs: number) => {
    const sandbox = await launchSandbox({
      bwrapPath,
      shape: {
        layout: await layout(),
        workspaceDirectory: directory,
        tmpBytes: limits.tmpBytes,
        seccomp: await seccomp(),
      },
      command: ['/bin/sh', '-c', command],
      stdin: false,
      ...(hostUser ? { hostUser } : {}),
    });
    sandbox.stdout.resume();
    const stderr = new OutputCapture(2048);
    stderr.attach(sandbox.stderr);
    const timer = setTimeout(() => sandbox.kill(), timeoutMs);
    const exit = await sandbox.exited.finally(() => clearTimeout(timer));
    // The child's close can come before its last output has passed through to the capture.
    await Promise.race([
      finished(sandbox.stderr).catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, 1000).unref()),
    ]);
    return { ...exit, stderr: stderr.text().trim() };
  };

  const fileOperations = workspaceFileOperations(fileHelper);

  return {
    kind: 'bwrap',

    async probe() {
      await seccomp().catch((error: unknown) => {
        throw new HostLimitUnavailableError(`sandboxes need a seccomp filter: ${(error as Error).message}`, {
          cause: error,
        });
      });
      const { quota, cgroups: hierarchy } = await host();
      // A scratch directory beside the workspaces: also proves they can be created and bound.
      const directory = await directories.createScratch();
      try {
        const exit = await runOnce(directory, '/bin/true', PROBE_TIMEOUT_MS).catch((error: unknown) => {
          throw describeSpawnFailure(error, bwrapPath);
        });
        if (exit.exitCode === 0) {
          if (quota && hierarchy) warm.start();
          return;
        }
        if (exit.killed) throw new Error(`bubblewrap did not run /bin/true within ${PROBE_TIMEOUT_MS / 1000} s.`);
        throw describeStartFailure(exit.exitCode, exit.stderr);
      } finally {
        await rmdir(directory).catch(() => undefined);
      }
    },

    async ensureWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      await ensureWithWarmSandbox(workspaceId);
      return { placement: hostname() };
    },

    async removeWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      const { quota } = await host();
      // Its sandbox first: nothing may run in a workspace that is going away.
      await pool.stop(workspaceId);
      if (quota) {
        await quota.remove(workspaceId);
        return;
      }
      // Moved aside first, so no new sandbox can start in it.
      const detached = await directories.detach(workspaceId);
      if (!detached) return;
      const exit = await runOnce(detached, CLEAR_WORKSPACE, REMOVE_TIMEOUT_MS).catch((error: unknown) => ({
        stderr: String(error),
      }));
      const removed = await rmdir(detached).then(
        () => true,
        () => false,
      );
      if (removed) return;
      await directories.reattach(detached, workspaceId).catch(() => undefined);
      throw new Error(`Workspace ${workspaceId} could not be removed completely (${exit.stderr}).`);
    },

    async exec(workspaceId, execOptions) {
      requireWorkspaceId(workspaceId);
      checkExecOptions(execOptions);
      await requireWorkspace(workspaceId);
      const weak = !(await host()).cgroups;
      const cpuSeconds = Math.ceil(execOptions.timeoutMs / 1000) + CPU_GRACE_SECONDS;
      const processLimits = commandLimits({ openFiles: limits.openFiles, cpuSeconds }, weak);
      let oomKillsBefore: number | undefined;
      let signal: number | undefined;
      const result = await runCommand(async () => {
        const sandbox = await pool.spawn(workspaceId, ['/bin/sh', '-c', execOptions.command], {
          stdin: false,
          limits: processLimits,
          ...(execOptions.environment ? { environment: execOptions.environment } : {}),
          beforeStart: async () => {
            oomKillsBefore = await cgroups.get(workspaceId)?.oomKills();
          },
        });
        void sandbox.exited.then((exit) => {
          signal = exit.signal;
        });
        return sandbox;
      }, execOptions);
      const cgroup = cgroups.get(workspaceId);
      return explainLimits(result, {
        workspaceId,
        signal,
        oomKillsBefore,
        oomKills: cgroup && (() => cgroup.oomKills()),
        memoryBytes: limits.memoryBytes,
        quota: (await host()).quota,
        quotaLimits,
      });
    },

    async close() {
      await warm.stop();
      await pool.stopAll();
      if (!hostPrepared) return;
      const quota = (await host().catch(() => undefined))?.quota;
      await quota?.close();
      // No sandbox of this process runs over the workspaces now: a stopped service leaves no
      // mount behind in its data directory (the files stay in their images).
      for (const failure of (await quota?.unmountOpened()) ?? []) {
        options.onWarning?.(`A workspace filesystem stayed mounted at shutdown: ${failure}`);
      }
    },

    ...fileOperations,

    async usage(workspaceId) {
      requireWorkspaceId(workspaceId);
      return workspaceUsage((await host()).quota, workspaceId, fileOperations.usage);
    },

    async resources(workspaceId) {
      requireWorkspaceId(workspaceId);
      // A cgroup removed meanwhile (the sandbox stopped) has nothing more to report.
      return cgroups
        .get(workspaceId)
        ?.resources()
        .catch(() => undefined);
    },

    async runningWorkspaces() {
      return [...cgroups.keys()];
    },
  };
}
