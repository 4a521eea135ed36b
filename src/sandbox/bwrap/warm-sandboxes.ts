import type { WorkspaceCgroup } from '../limits/cgroups.js';
import type { MountedSpare } from '../limits/quota-filesystem.js';
import type { StartedWorkspaceSandbox } from './workspace-sandbox.js';

/** A workspace sandbox started ahead of need over a spare filesystem, waiting for its workspace. */
export interface WarmSandbox {
  spare: MountedSpare;
  /** Its supervisor, at background priority until taken; `stop` tears down the sandbox and its cgroup. */
  supervisor: StartedWorkspaceSandbox;
  /** Its cgroup (none under weak limits), the workspace's once taken. */
  cgroup?: WorkspaceCgroup;
}

/** Sandboxes started ahead of need, so that a new workspace's first call finds one running. */
export interface WarmSandboxes {
  /**
   * A running one, now the caller's, or undefined when none is there; starts a replacement in the
   * background. When none waits but one is starting, waits for that one: it is closer to ready
   * than a sandbox started now would be.
   */
  take(): Promise<WarmSandbox | undefined>;
  /** Starts filling up (again); idempotent. */
  start(): void;
  /** Makes no more, waits for the one in the making and stops every waiting one (for shutdown). */
  stop(): Promise<void>;
}

export interface WarmSandboxesOptions {
  /** How many wait at most; 0 makes none. */
  size: number;
  /** Starts one: mounts a spare filesystem and starts a sandbox over it. */
  make(): Promise<WarmSandbox>;
  /** A waiting one older than this is replaced, so that none outlives the leftover sweep's horizon. */
  maxAgeMs: number;
  /** After a failed start, how long until the next try. */
  retryMs: number;
  /**
   * How long after a take its replacement starts, so that starting it does not compete for the
   * CPU with the call that took one. A take that leaves none waiting refills at once.
   */
  refillDelayMs: number;
  onWarning?: (message: string) => void;
}

interface Waiting {
  sandbox: WarmSandbox;
  expiry: NodeJS.Timeout;
}

/**
 * Keeps up to `size` sandboxes running with nothing in them, made one at a time off the request
 * path. One that dies while it waits, or grows older than `maxAgeMs`, is discarded and replaced.
 * A sandbox holds nothing of any workspace until taken, and is taken once.
 *
 * @example
 * const warm = createWarmSandboxes({ size: 2, make, maxAgeMs: 3_600_000, retryMs: 30_000, refillDelayMs: 250 });
 * warm.start();
 * const ready = warm.take(); // → { spare, supervisor } or undefined
 */
export function createWarmSandboxes(options: WarmSandboxesOptions): WarmSandboxes {
  const waiting: Waiting[] = [];
  let making: Promise<void> | undefined;
  /** The start under way, settled (never rejected) when it has succeeded or failed. */
  let starting: Promise<unknown> | undefined;
  let retry: NodeJS.Timeout | undefined;
  let refill: NodeJS.Timeout | undefined;
  let started = false;
  let stopped = false;
  /** Discards under way, which `stop` waits for too. */
  const discarding = new Set<Promise<void>>();

  const discard = (sandbox: WarmSandbox): Promise<void> => {
    const done = (async () => {
      await sandbox.supervisor.stop().catch(() => undefined);
      await sandbox.spare.discard();
    })();
    discarding.add(done);
    void done.finally(() => discarding.delete(done));
    return done;
  };

  const remove = (entry: Waiting) => {
    const index = waiting.indexOf(entry);
    if (index < 0) return false;
    waiting.splice(index, 1);
    clearTimeout(entry.expiry);
    return true;
  };

  const fill = () => {
    if (!started || stopped || making || retry || waiting.length >= options.size) return;
    clearTimeout(refill);
    refill = undefined;
    making = (async () => {
      try {
        while (!stopped && waiting.length < options.size) {
          const made = options.make();
          starting = made.catch(() => undefined);
          const sandbox = await made;
          if (stopped) {
            await discard(sandbox);
            return;
          }
          const entry: Waiting = {
            sandbox,
            expiry: setTimeout(() => {
              if (remove(entry)) void discard(sandbox).then(fill);
            }, options.maxAgeMs),
          };
          entry.expiry.unref();
          void sandbox.supervisor.connection.whenClosed.then(() => {
            if (remove(entry)) void discard(sandbox).then(fill);
          });
          waiting.push(entry);
        }
      } catch (error) {
        options.onWarning?.(`No sandbox could be started ahead of need: ${(error as Error).message}`);
        retry = setTimeout(() => {
          retry = undefined;
          fill();
        }, options.retryMs);
        retry.unref();
      } finally {
        making = undefined;
        starting = undefined;
      }
    })();
  };

  return {
    async take() {
      if (waiting.length === 0 && starting) await starting;
      for (let entry = waiting.shift(); entry; entry = waiting.shift()) {
        clearTimeout(entry.expiry);
        if (!entry.sandbox.supervisor.connection.closed) {
          if (waiting.length === 0) fill();
          else if (!refill) {
            refill = setTimeout(fill, options.refillDelayMs);
            refill.unref();
          }
          return entry.sandbox;
        }
        void discard(entry.sandbox);
      }
      fill();
      return undefined;
    },

    start() {
      if (options.size === 0 || stopped) return;
      started = true;
      fill();
    },

    async stop() {
      stopped = true;
      clearTimeout(retry);
      clearTimeout(refill);
      await making;
      const all = waiting.splice(0);
      for (const entry of all) clearTimeout(entry.expiry);
      await Promise.all(all.map((entry) => discard(entry.sandbox)));
      await Promise.all(discarding);
    },
  };
}
