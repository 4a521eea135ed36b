import type { Readable, Writable } from 'node:stream';

/** How a sandboxed process ended. */
export interface SandboxExit {
  /** The command's exit status; undefined when it never ran or was killed before reporting one. */
  exitCode: number | undefined;
  /** Whether `kill()` was called before the process was gone. */
  killed: boolean;
  /** The signal that ended the command, when one did (SIGKILL of the OOM killer, say). */
  signal?: number;
  /** Why the command could not run or was lost (its program is missing, the supervisor died). */
  error?: string;
  /** The supervisor went away before the command started: nothing of it ran, it may be retried. */
  notStarted?: boolean;
  /**
   * CPU time (user + system, seconds) of the command and every process of it that was waited
   * for, orphans included; absent when the supervisor could not tell (the command did not start).
   */
  cpuSeconds?: number;
}

/**
 * One process a backend started inside a workspace's boundary. Its stdout and stderr must be
 * consumed, or it stalls on a full pipe. None of its streams ever throws an error at the process
 * (a pipe that breaks when the process dies shows as `destroyed`/`close`, and as `exited`). Both
 * backends hand these to the same exec and file-helper code.
 */
export interface SandboxProcess {
  readonly stdin: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Kills the process and everything it started, however it detached (`setsid`, `nohup`, double
   * fork): each backend kills a whole boundary (bwrap: the PID namespace; docker: the
   * workspace's container). Safe to call at any time.
   */
  kill(): void;
  /** Settles once every process it started is gone. */
  readonly exited: Promise<SandboxExit>;
}
