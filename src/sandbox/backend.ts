import type { Readable } from 'node:stream';
import type { CommandEnvironment } from './supervisor/supervisor-pool.js';

/**
 * A sandbox backend runs commands and file operations inside one workspace's isolation boundary.
 * Workspaces are named by an opaque id the service assigns (never a user-supplied value); paths
 * are relative to the workspace root (`/workspace` inside the sandbox).
 *
 * Implementations: `bwrap` (embedded default) and `docker`; `kubernetes` is designed in
 * `docs/kubernetes-sandbox-backend.md`. Each must pass the backend contract suite in
 * `test/support/sandbox-backend-contract.ts`.
 */
export interface SandboxBackend {
  readonly kind: 'bwrap' | 'docker' | 'kubernetes';

  /**
   * Readiness: runs a real, trivial sandboxed command and throws if the backend cannot currently
   * run one. No workspace is created or touched.
   */
  probe(): Promise<void>;

  /** Creates the workspace's storage if it does not exist yet; idempotent. Returns its placement. */
  ensureWorkspace(workspaceId: string): Promise<{ placement: string }>;

  /** Deletes a workspace and everything in it; a missing one is fine. */
  removeWorkspace(workspaceId: string): Promise<void>;

  /**
   * Runs `sh -c command` in the workspace (cwd `/workspace`). On timeout or abort the whole
   * process tree is killed. stdout and stderr are each capped at `maxOutputBytes` while
   * streaming (the rest is read and dropped, never buffered).
   */
  exec(workspaceId: string, options: ExecOptions): Promise<ExecResult>;

  /** Entries of a directory (no recursion), refusing symlinks on the way. */
  listFiles(workspaceId: string, path: string, options: { maxEntries: number }): Promise<ListResult>;

  /**
   * Opens a regular file for reading (no symlink anywhere on its path). Fails with `TOO_LARGE`
   * when the file is larger than `maxBytes`, before streaming anything.
   */
  openFile(workspaceId: string, path: string, options: { maxBytes: number }): Promise<{ size: number; body: Readable }>;

  /**
   * Writes a regular file (creating parent directories), replacing an existing regular file
   * unless `exclusive`. Refuses symlinks anywhere on the path and writes past `maxBytes`.
   */
  writeFile(
    workspaceId: string,
    path: string,
    body: Readable,
    options: { maxBytes: number; exclusive?: boolean },
  ): Promise<{ size: number }>;

  /**
   * What the workspace holds: bytes (for the byte quota) and files, directories and links (for
   * the file limit). Cheap with a workspace filesystem (one statfs); a bounded walk otherwise.
   */
  usage(workspaceId: string): Promise<WorkspaceMeasure>;

  /**
   * What the workspace's current sandbox (its cgroup or container) has used, for metering;
   * undefined when none runs. Readings of one instance only grow.
   */
  resources?(workspaceId: string): Promise<WorkspaceResources | undefined>;

  /** Workspaces whose sandbox runs now where this backend can read it (for periodic metering). */
  runningWorkspaces?(): Promise<string[]>;

  /** Stops every sandbox this backend runs (their workspaces stay); for shutdown. */
  close?(): Promise<void>;
}

/**
 * One reading of a workspace sandbox's own accounting: every process it ever ran counts, those a
 * command left behind and those already gone included.
 */
export interface WorkspaceResources {
  /** CPU time (user + system) of the sandbox instance since it started. */
  cpuSeconds: number;
  /** Memory charged to the sandbox now, less the inactive page cache (as `docker stats` shows it). */
  memoryBytes: number;
  /** Names the sandbox instance; a sandbox made again (its counters back at 0) has another. */
  instance: string;
  /** When the instance started (epoch ms): a later instance has a later one. */
  startedAt: number;
}

/**
 * Receives a sandbox's last reading just before the backend stops it (idle, shutdown, removal):
 * what it used since the previous reading is not lost with it. Must not throw; it is awaited.
 */
export type FinalReading = (workspaceId: string, resources: WorkspaceResources) => Promise<void>;

/** A workspace's measured size. */
export interface WorkspaceMeasure {
  /** Bytes its files take. */
  bytes: number;
  /** Files, directories and links it holds (inodes; the root directory aside). */
  files: number;
  /** The most files it can hold, when its own filesystem enforces a limit (absent under weak limits). */
  maxFiles?: number;
}

export interface ExecOptions {
  command: string;
  timeoutMs: number;
  /** Aborting kills the process tree, exactly like a timeout. */
  signal?: AbortSignal;
  /** Cap per stream (stdout, stderr). */
  maxOutputBytes: number;
  /**
   * Variables the command gets from its workspace's network policy, given the port of the way out
   * inside its sandbox (see `CommandEnvironment`); absent: nothing is added and no proxy is named.
   */
  environment?: CommandEnvironment;
  /**
   * Called with each chunk of output as the command writes it, before any cap, for live output;
   * absent: nothing is called and nothing more is done per chunk. It must not throw.
   */
  onOutput?: (stream: OutputStreamName, chunk: Buffer) => void;
}

/** The two output streams of a command. */
export type OutputStreamName = 'stdout' | 'stderr';

export interface ExecResult {
  /** Null when the process was killed. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** Whether either stream was cut at `maxOutputBytes`. */
  truncated: boolean;
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /**
   * CPU time (user + system, seconds) of the command and every process it started that ended
   * with it, for traces and metering; absent when the backend cannot tell. Not shown to the model.
   */
  cpuSeconds?: number;
  /** The kernel killed the command because the workspace reached its memory limit. */
  outOfMemory?: boolean;
  /** The workspace's filesystem was full (bytes or files) when the command ended. */
  quotaReached?: boolean;
  /** What the limits did, for the model: starts with OUT_OF_MEMORY or WORKSPACE_QUOTA_REACHED. */
  message?: string;
}

export interface DirectoryEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  /** Bytes, for regular files; 0 otherwise. */
  size: number;
}

export interface ListResult {
  entries: DirectoryEntry[];
  /** More entries existed than `maxEntries`. */
  truncated: boolean;
}

export type WorkspaceFileErrorCode =
  | 'INVALID_PATH'
  | 'NOT_FOUND'
  | 'NOT_A_FILE'
  | 'NOT_A_DIRECTORY'
  | 'SYMLINK'
  | 'TOO_LARGE'
  | 'EXISTS';

/**
 * A refused file operation, with a stable code and a message safe to show the model (it never
 * names host paths).
 */
export class WorkspaceFileError extends Error {
  constructor(
    readonly code: WorkspaceFileErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WorkspaceFileError';
  }
}
