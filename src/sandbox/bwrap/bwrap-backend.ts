import { rmdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { SandboxBackend } from '../backend.js';
import { fileHelperSource, type StartHelper, workspaceFileOperations } from '../runtime/file-operations.js';
import { DEFAULT_PROCESS_LIMITS, HELPER_OPEN_FILES, resolveLimits } from '../runtime/limits.js';
import { OutputCapture } from '../runtime/output-capture.js';
import { checkExecOptions, runCommand } from '../runtime/run-command.js';
import { requireWorkspaceId } from '../runtime/workspace-path.js';
import {
  detectHostLayout,
  HELPER_PATH,
  type HostLayout,
  limitedCommand,
  type SandboxLimits,
  WORKSPACE_MOUNT,
} from './bwrap-arguments.js';
import { findPidsCgroupParent, type PidsCgroupParent } from './pids-cgroup.js';
import { describeSpawnFailure, describeStartFailure } from './probe-failure.js';
import { type HostUser, launchSandbox, type SandboxProcess } from './run-sandboxed.js';
import { createWorkspaceDirectories } from './workspace-directories.js';

export type { SandboxLimits } from './bwrap-arguments.js';
export type { HostUser } from './run-sandboxed.js';

/** Options of `createBwrapBackend`; only `workspacesDir` is required. */
export interface BwrapBackendOptions {
  /** Host directory holding one sub-directory per workspace id; created when missing. */
  workspacesDir: string;
  /** The bubblewrap executable (looked up on `PATH` unless absolute). Default `bwrap`. */
  bwrapPath?: string;
  /** Limits for every sandboxed process; each defaults as documented on `DEFAULT_LIMITS`. */
  limits?: Partial<SandboxLimits>;
  /** The Python 3 that runs the file helper inside the sandbox. Default `/usr/bin/python3`. */
  python?: string;
  /**
   * The unprivileged host user sandboxes run as when the service runs as root (ignored otherwise:
   * they then run as the service's own user). Default 65534 (`nobody`); a dedicated uid is better
   * on a shared host. Never 0: a sandbox mapped to host root could write global sysctls in
   * /proc/sys and is exempt from RLIMIT_NPROC.
   */
  hostUser?: HostUser;
  /** `off` skips the per-sandbox pids cgroup even where one could be created. Default `auto`. */
  pidsCgroup?: 'auto' | 'off';
}

/** The limits a backend gets unless its options lower or raise them. */
export const DEFAULT_LIMITS: Readonly<SandboxLimits> = DEFAULT_PROCESS_LIMITS;

const DEFAULT_HOST_USER: HostUser = { uid: 65534, gid: 65534 };
/** CPU seconds granted beyond an exec's wall-clock timeout (the timeout is what normally stops it). */
const CPU_GRACE_SECONDS = 5;
/** CPU seconds of one file operation (the helper mostly waits on I/O). */
const HELPER_CPU_SECONDS = 120;
const PROBE_TIMEOUT_MS = 15_000;
const REMOVE_TIMEOUT_MS = 120_000;
const REMOVE_ATTEMPTS = 3;
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

/** Memoizes an async computation; a failure is not kept, so the next call retries. */
function lazily<T>(compute: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= compute().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}

/**
 * The embedded sandbox backend: every exec and every file operation is its own bubblewrap
 * sandbox over the workspace directory (see `sandboxArguments` for exactly what it contains).
 *
 * What protects what:
 * - Namespaces and mounts: no network, no host files beyond read-only `/usr` and a few /etc
 *   entries, no other workspace, no capabilities; the environment holds five fixed variables.
 * - Host user: a root service only stages the sandbox and runs its bwrap as `hostUser` (see
 *   `stagingPrefix`), so sandboxed code is never host root.
 * - prlimit: address space, file size, open files and CPU time per process; RLIMIT_NPROC, which
 *   on Linux ≥ 5.14 counts per user namespace, i.e. per sandbox.
 * - A pids cgroup per sandbox where the host lets us create one: a fork bomb stops at `processes`
 *   even where RLIMIT_NPROC would not (older kernels, where it counts the whole host uid).
 * - Killing: SIGKILL to bwrap's process group on timeout or abort takes the PID namespace, and so
 *   every process the command started, down with it.
 * - File operations run `fileops.py` inside a sandbox, walking paths without following symlinks;
 *   the host only ever creates, renames and removes the workspace directory itself.
 *
 * @example
 * const backend = createBwrapBackend({ workspacesDir: path.join(config.dataDir, 'workspaces') });
 * await backend.probe();
 * await backend.ensureWorkspace('ws_0123');
 * const result = await backend.exec('ws_0123', { command: 'python3 -V', timeoutMs: 10_000, maxOutputBytes: 65_536 });
 */
export function createBwrapBackend(options: BwrapBackendOptions): SandboxBackend {
  const limits = resolveLimits(DEFAULT_LIMITS, options.limits);
  const helperLimits: SandboxLimits = { ...limits, openFiles: Math.max(limits.openFiles, HELPER_OPEN_FILES) };
  const bwrapPath = options.bwrapPath ?? 'bwrap';
  const python = options.python ?? '/usr/bin/python3';
  const hostUser = resolveHostUser(options.hostUser);
  const directories = createWorkspaceDirectories(path.resolve(options.workspacesDir), hostUser);
  const layout = lazily<HostLayout>(detectHostLayout);
  const cgroupParent = lazily<PidsCgroupParent | undefined>(() =>
    options.pidsCgroup === 'off' ? Promise.resolve(undefined) : findPidsCgroupParent(),
  );
  /** Sandboxes alive per workspace, so removing a workspace can stop them first. */
  const running = new Map<string, Set<SandboxProcess>>();

  const launch = async (
    directory: string,
    command: string[],
    launchOptions: { stdin?: boolean; helper?: Buffer; workspaceId?: string } = {},
  ): Promise<SandboxProcess> => {
    const sandbox = await launchSandbox({
      bwrapPath,
      shape: {
        layout: await layout(),
        workspaceDirectory: directory,
        tmpBytes: limits.tmpBytes,
        helper: launchOptions.helper,
      },
      command,
      stdin: launchOptions.stdin ?? false,
      hostUser,
      cgroupParent: await cgroupParent(),
      processes: limits.processes,
    });
    const { workspaceId } = launchOptions;
    if (workspaceId !== undefined) {
      const alive = running.get(workspaceId) ?? new Set();
      running.set(workspaceId, alive.add(sandbox));
      void sandbox.exited.finally(() => {
        alive.delete(sandbox);
        if (alive.size === 0 && running.get(workspaceId) === alive) running.delete(workspaceId);
      });
    }
    return sandbox;
  };

  const fileHelper = async (workspaceId: string): Promise<StartHelper> => {
    const directory = await directories.existing(workspaceId);
    const helper = await fileHelperSource();
    return (helperArguments, { stdin }) =>
      launch(
        directory,
        limitedCommand(helperLimits, HELPER_CPU_SECONDS, [python, '-I', '-S', HELPER_PATH, ...helperArguments]),
        { stdin, helper, workspaceId },
      );
  };

  /** Runs a service-side shell command to completion over `directory`, killing it after `timeoutMs`. */
  const runToEnd = async (directory: string, command: string, timeoutMs: number) => {
    const cpuSeconds = Math.ceil(timeoutMs / 1000);
    const sandbox = await launch(directory, limitedCommand(limits, cpuSeconds, ['/bin/sh', '-c', command]));
    sandbox.stdout.resume();
    const stderr = new OutputCapture(2048);
    stderr.attach(sandbox.stderr);
    const timer = setTimeout(() => sandbox.kill(), timeoutMs);
    const exit = await sandbox.exited.finally(() => clearTimeout(timer));
    return { ...exit, stderr: stderr.text().trim() };
  };

  return {
    kind: 'bwrap',

    async probe() {
      // A scratch directory beside the workspaces: also proves they can be created and bound.
      const directory = await directories.createScratch();
      try {
        const exit = await runToEnd(directory, '/bin/true', PROBE_TIMEOUT_MS).catch((error: unknown) => {
          throw describeSpawnFailure(error, bwrapPath);
        });
        if (exit.exitCode === 0) return;
        if (exit.killed) throw new Error(`bubblewrap did not run /bin/true within ${PROBE_TIMEOUT_MS / 1000} s.`);
        throw describeStartFailure(exit.exitCode, exit.stderr);
      } finally {
        await rmdir(directory).catch(() => undefined);
      }
    },

    async ensureWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      await directories.ensure(workspaceId);
      return { placement: hostname() };
    },

    async removeWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      // Moved aside first, so no new sandbox can start in it; then whatever still runs is stopped.
      const detached = await directories.detach(workspaceId);
      if (!detached) return;
      const alive = [...(running.get(workspaceId) ?? [])];
      for (const sandbox of alive) sandbox.kill();
      await Promise.all(alive.map((sandbox) => sandbox.exited));
      let problem = '';
      try {
        for (let attempt = 1; attempt <= REMOVE_ATTEMPTS; attempt += 1) {
          const exit = await runToEnd(detached, CLEAR_WORKSPACE, REMOVE_TIMEOUT_MS);
          const removed = await rmdir(detached).then(
            () => true,
            (error: unknown) => {
              problem = exit.stderr || String(error);
              return false;
            },
          );
          if (removed) return;
        }
      } catch (error) {
        problem = String(error);
      }
      await directories.reattach(detached, workspaceId).catch(() => undefined);
      throw new Error(`Workspace ${workspaceId} could not be removed completely (${problem}).`);
    },

    async exec(workspaceId, execOptions) {
      requireWorkspaceId(workspaceId);
      checkExecOptions(execOptions);
      const directory = await directories.existing(workspaceId);
      const cpuSeconds = Math.ceil(execOptions.timeoutMs / 1000) + CPU_GRACE_SECONDS;
      const command = limitedCommand(limits, cpuSeconds, ['/bin/sh', '-c', execOptions.command]);
      return runCommand(() => launch(directory, command, { workspaceId }), execOptions);
    },

    ...workspaceFileOperations(fileHelper),
  };
}
