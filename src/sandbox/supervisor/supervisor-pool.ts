import { PassThrough, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { observeStreamErrors } from '../../stream-errors.js';
import type { SandboxExit, SandboxProcess } from '../runtime/sandbox-process.js';
import type { CommandLimits, SupervisorConnection } from './supervisor-connection.js';
import type { TunnelStream } from './tunnel-stream.js';

/** Variables a command gets from its workspace's way out, once its supervisor's is known. */
export type CommandEnvironment = (wayOut: { proxyPort: number }) => Readonly<Record<string, string>> | undefined;

/** Settles once `stream` has handed over all it holds (or failed, or was torn down). */
function drained(stream: Readable): Promise<void> {
  return finished(stream).catch(() => undefined);
}

/** One started supervisor, as a backend hands it to the pool. */
export interface StartedSupervisor {
  connection: SupervisorConnection;
  /** Kills the supervisor's whole boundary and settles once everything in it is gone. */
  stop(): Promise<void>;
}

export interface SupervisorPoolOptions {
  /** Starts the workspace's supervisor (creating its sandbox); resolves once it is ready. */
  start(workspaceId: string): Promise<StartedSupervisor>;
  /** A supervisor with no command for this long is stopped. */
  idleMs: number;
  /**
   * Receives every connection sandboxed code makes to its supervisor's proxy listener, with the
   * workspace it came from (known by the supervisor it came through, never from the sandbox).
   * Without it every such connection is closed at once.
   */
  onTunnel?: (workspaceId: string, tunnel: TunnelStream) => void;
}

export interface SupervisorPool {
  /** Runs `argv` in the workspace's supervisor, starting one (again) when none is running. */
  spawn(
    workspaceId: string,
    argv: readonly string[],
    options: {
      stdin: boolean;
      limits?: CommandLimits;
      /** Runs once the supervisor is up, right before the command starts (to read counters, say). */
      beforeStart?: () => Promise<void>;
      /**
       * Variables added to the command's environment, given the supervisor's proxy port; not
       * asked when the supervisor has no listener (the command then has no way out).
       */
      environment?: CommandEnvironment;
    },
  ): Promise<SandboxProcess>;
  /**
   * Makes a supervisor started elsewhere (ahead of need) the workspace's, as if its first command
   * had started it. A workspace that already has one keeps it, and the given one is stopped.
   */
  adopt(workspaceId: string, supervisor: StartedSupervisor): Promise<void>;
  /** Whether the workspace has a supervisor up (one that a spawn would use as it is). */
  isRunning(workspaceId: string): boolean;
  /** Stops the workspace's supervisor (its commands die with it); a later spawn starts a new one. */
  stop(workspaceId: string): Promise<void>;
  /** Stops every supervisor. */
  stopAll(): Promise<void>;
}

interface Entry {
  started: Promise<StartedSupervisor>;
  supervisor?: StartedSupervisor;
  idleTimer?: NodeJS.Timeout;
}

/**
 * One supervisor per active workspace: started by the first command, shared by every later one,
 * stopped after `idleMs` without commands, and replaced transparently when it died (a killed
 * supervisor fails only the commands it was running, never the next call).
 *
 * @example
 * const pool = createSupervisorPool({ start: (id) => startWorkspaceSandbox(id), idleMs: 300_000 });
 * const process = await pool.spawn('ws_0123', ['/bin/sh', '-c', 'ls'], { stdin: false });
 */
export function createSupervisorPool(options: SupervisorPoolOptions): SupervisorPool {
  const entries = new Map<string, Entry>();
  /**
   * Stops in progress: a new supervisor of the workspace waits for the old one to be gone. They
   * never reject: a stop that failed (its runtime unreachable, say) must not fail every later start.
   */
  const stopping = new Map<string, Promise<void>>();

  /** Stops the entry's supervisor; rejects when that stop failed (the pool forgets it either way). */
  const stopEntry = async (workspaceId: string, entry: Entry) => {
    clearTimeout(entry.idleTimer);
    if (entries.get(workspaceId) === entry) entries.delete(workspaceId);
    const stopped = (async () => {
      const supervisor = await entry.started.catch(() => undefined);
      await supervisor?.stop();
    })();
    const previous = stopping.get(workspaceId) ?? Promise.resolve();
    const all = Promise.all([previous, stopped.catch(() => undefined)]).then(() => undefined);
    stopping.set(workspaceId, all);
    await all;
    if (stopping.get(workspaceId) === all) stopping.delete(workspaceId);
    await stopped;
  };

  /** A stop nobody waits for (idle, or after the supervisor died): its failure has no one to tell. */
  const stopInBackground = (workspaceId: string, entry: Entry) => {
    stopEntry(workspaceId, entry).catch(() => undefined);
  };

  const scheduleIdleStop = (workspaceId: string, entry: Entry) => {
    clearTimeout(entry.idleTimer);
    if (entry.supervisor?.connection.running !== 0) return;
    entry.idleTimer = setTimeout(() => {
      if (entry.supervisor?.connection.running === 0) stopInBackground(workspaceId, entry);
    }, options.idleMs);
    entry.idleTimer.unref();
  };

  const acquire = async (workspaceId: string): Promise<{ entry: Entry; supervisor: StartedSupervisor }> => {
    const existing = entries.get(workspaceId);
    if (existing) {
      const supervisor = await existing.started.catch(() => undefined);
      if (supervisor && !supervisor.connection.closed) return { entry: existing, supervisor };
      // Dead, or failed to start: forget it (stopping whatever is left) and start afresh.
      if (entries.get(workspaceId) === existing) await stopEntry(workspaceId, existing);
      const raced = entries.get(workspaceId);
      if (raced) return acquire(workspaceId);
    }
    const previous = stopping.get(workspaceId);
    if (previous) {
      await previous;
      const raced = entries.get(workspaceId);
      if (raced) return acquire(workspaceId);
    }
    const entry: Entry = { started: options.start(workspaceId) };
    entries.set(workspaceId, entry);
    try {
      return { entry, supervisor: await running(workspaceId, entry) };
    } catch (error) {
      if (entries.get(workspaceId) === entry) entries.delete(workspaceId);
      throw error;
    }
  };

  /** Waits for the entry's supervisor to be up and watches it from then on. */
  const running = async (workspaceId: string, entry: Entry): Promise<StartedSupervisor> => {
    const supervisor = await entry.started;
    entry.supervisor = supervisor;
    const onTunnel = options.onTunnel;
    if (onTunnel) supervisor.connection.acceptTunnels((tunnel) => onTunnel(workspaceId, tunnel));
    void supervisor.connection.whenClosed.then(() => {
      // Gone on its own (killed, crashed): its boundary is torn down now, not at the next call.
      if (entries.get(workspaceId) === entry) stopInBackground(workspaceId, entry);
    });
    return supervisor;
  };

  /** Starts the command once in the workspace's current supervisor. */
  const spawnOnce = async (
    workspaceId: string,
    argv: readonly string[],
    spawnOptions: Parameters<SupervisorPool['spawn']>[2],
  ): Promise<SandboxProcess> => {
    const { entry, supervisor } = await acquire(workspaceId);
    clearTimeout(entry.idleTimer);
    await spawnOptions.beforeStart?.();
    let env: Readonly<Record<string, string>> | undefined;
    if (spawnOptions.environment) {
      const { proxyPort } = await supervisor.connection.ready;
      if (proxyPort !== null) env = spawnOptions.environment({ proxyPort });
    }
    const process = supervisor.connection.spawn(argv, {
      stdin: spawnOptions.stdin,
      ...(spawnOptions.limits ? { limits: spawnOptions.limits } : {}),
      ...(env ? { env } : {}),
    });
    void process.exited.then(() => scheduleIdleStop(workspaceId, entry));
    return process;
  };

  return {
    async spawn(workspaceId, argv, spawnOptions) {
      const first = await spawnOnce(workspaceId, argv, spawnOptions);
      // A command with stdin is handed over as it is: its input cannot be replayed.
      if (spawnOptions.stdin) return first;
      // Otherwise one that never started, because the supervisor died just before (killed,
      // crashed), starts again in a new one: the caller sees one process.
      const stdout = observeStreamErrors(new PassThrough());
      const stderr = observeStreamErrors(new PassThrough());
      let current = first;
      let killRequested = false;
      const follow = async (process: SandboxProcess, retry: boolean): Promise<SandboxExit> => {
        process.stdout.pipe(stdout, { end: false });
        process.stderr.pipe(stderr, { end: false });
        const exit = await process.exited;
        if (exit.notStarted && retry && !killRequested) {
          current = await spawnOnce(workspaceId, argv, spawnOptions);
          if (killRequested) current.kill();
          return follow(current, false);
        }
        return exit;
      };
      const exited = follow(first, true);
      // A slow reader (a file being published, flushed to disk as it comes) can still have output
      // of the command buffered after it exited: the copies end once that has been handed over,
      // or their last bytes would be cut off.
      // Each copy ends on its own, so an unread stderr cannot hold stdout open.
      const endAfterDrained = (pick: (process: SandboxProcess) => Readable, copy: PassThrough) =>
        void exited
          .then(
            () => drained(pick(current)),
            () => undefined,
          )
          .finally(() => copy.end());
      endAfterDrained((process) => process.stdout, stdout);
      endAfterDrained((process) => process.stderr, stderr);
      return {
        stdin: null,
        stdout,
        stderr,
        kill() {
          killRequested = true;
          current.kill();
        },
        exited,
      };
    },

    async adopt(workspaceId, supervisor) {
      if (entries.has(workspaceId) || stopping.has(workspaceId) || supervisor.connection.closed) {
        await supervisor.stop();
        return;
      }
      const entry: Entry = { started: Promise.resolve(supervisor) };
      entries.set(workspaceId, entry);
      await running(workspaceId, entry);
      scheduleIdleStop(workspaceId, entry);
    },

    isRunning(workspaceId) {
      const supervisor = entries.get(workspaceId)?.supervisor;
      return supervisor !== undefined && !supervisor.connection.closed;
    },

    async stop(workspaceId) {
      const entry = entries.get(workspaceId);
      if (entry) await stopEntry(workspaceId, entry);
    },

    async stopAll() {
      await Promise.all([...entries].map(([workspaceId, entry]) => stopEntry(workspaceId, entry)));
    },
  };
}
