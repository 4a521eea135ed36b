import { writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { OutputCapture } from '../runtime/output-capture.js';
import { connectSupervisor } from '../supervisor/supervisor-connection.js';
import type { StartedSupervisor } from '../supervisor/supervisor-pool.js';
import { type HostLayout, type HostUser, SUPERVISOR_PATH } from './bwrap-arguments.js';
import { launchSandbox } from './run-sandboxed.js';

/** Everything one workspace's long-lived sandbox is made of. */
export interface WorkspaceSandboxOptions {
  bwrapPath: string;
  layout: HostLayout;
  /** Host directory (the workspace's own filesystem, mounted) bound at /workspace. */
  workspaceDirectory: string;
  tmpBytes: number;
  hostUser?: HostUser;
  /** The Python 3 that runs the supervisor and the file helper inside. */
  python: string;
  supervisor: Buffer;
  helper: Buffer;
  seccomp: Buffer;
  /** The workspace's cgroup; the supervisor is placed in it before it runs. */
  cgroup?: { add(pid: number): Promise<void> };
  /** Started ahead of need: at the lowest CPU priority until `foreground` (see `StartedWorkspaceSandbox`). */
  background?: boolean;
}

/** A started workspace sandbox. */
export interface StartedWorkspaceSandbox extends StartedSupervisor {
  /**
   * Gives a sandbox started in the background normal CPU priority again, before its first
   * command (which inherits the supervisor's). Needs CAP_SYS_NICE, which a root service has.
   */
  foreground(): void;
}

/** How long a new supervisor may take to say it is ready (Python's start-up, mostly). */
const READY_TIMEOUT_MS = 15_000;
/**
 * The supervisor's OOM score adjustment: -999 rather than -1000, which would let a command (it
 * inherits the floor the host sets) make itself unkillable too. At -999 the OOM killer of the
 * workspace's cgroup still picks the largest process, and the supervisor is the smallest.
 */
const SUPERVISOR_OOM_SCORE_ADJ = '-999';
const STDERR_EXCERPT_BYTES = 4096;
/** The nice value of a sandbox started ahead of need: it yields the CPU to every call being served. */
const BACKGROUND_NICENESS = 19;

/**
 * Starts the long-lived sandbox of one workspace: bwrap (with the seccomp filter, the workspace
 * bound at /workspace, the supervisor and file helper bound read-only) running the supervisor
 * as its PID 1, which forks every command the host asks for. Killing the sandbox kills its PID
 * namespace, so nothing it started outlives it.
 *
 * @throws when bwrap cannot start or the supervisor does not become ready (the message says why).
 */
export async function startWorkspaceSandbox(options: WorkspaceSandboxOptions): Promise<StartedWorkspaceSandbox> {
  const sandbox = await launchSandbox({
    bwrapPath: options.bwrapPath,
    shape: {
      layout: options.layout,
      workspaceDirectory: options.workspaceDirectory,
      tmpBytes: options.tmpBytes,
      helper: options.helper,
      supervisor: options.supervisor,
      seccomp: options.seccomp,
    },
    command: [options.python, '-I', '-S', SUPERVISOR_PATH],
    stdin: true,
    ...(options.hostUser ? { hostUser: options.hostUser } : {}),
    ...(options.cgroup ? { cgroup: options.cgroup } : {}),
    ...(options.background ? { niceness: BACKGROUND_NICENESS } : {}),
  });
  const stderr = new OutputCapture(STDERR_EXCERPT_BYTES);
  stderr.attach(sandbox.stderr);
  const connection = connectSupervisor({
    stdin: sandbox.stdin as NonNullable<typeof sandbox.stdin>,
    stdout: sandbox.stdout,
  });
  const stop = async () => {
    sandbox.kill();
    await sandbox.exited;
  };

  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      connection.ready,
      new Promise((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new Error(`did not start within ${READY_TIMEOUT_MS / 1000} s`)),
          READY_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (error) {
    await stop();
    const detail = stderr.text().trim().split('\n').slice(-3).join(' ') || (error as Error).message;
    throw new Error(`The workspace sandbox could not start: ${detail}`);
  } finally {
    clearTimeout(timer);
  }
  if (sandbox.childPid !== undefined) {
    // Only a service with CAP_SYS_RESOURCE may lower it; elsewhere the commands' raised score
    // (see supervisor.py) is what keeps the OOM killer away from the supervisor.
    await writeFile(`/proc/${sandbox.childPid}/oom_score_adj`, SUPERVISOR_OOM_SCORE_ADJ).catch(() => undefined);
  }
  const foreground = () => {
    if (!options.background || sandbox.childPid === undefined) return;
    try {
      setPriority(sandbox.childPid, 0);
    } catch {
      // Gone already, or no CAP_SYS_NICE: the sandbox then runs at the background priority.
    }
  };
  return { connection, stop, foreground };
}
