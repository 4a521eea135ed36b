import type { Logger } from '../logger.js';
import { HostLimitUnavailableError } from './limits/host-limits.js';

export interface CachedProbe {
  /**
   * The last known readiness. The first call waits for a probe; later calls answer from the
   * cache and refresh it in the background once it is older than the TTL, so callers (like the
   * side-effect-free status route) never wait on, or multiply, probes.
   */
  isReady(): Promise<boolean>;
  /** Why the last probe failed, when a host limit is missing (`HostLimitUnavailableError`). */
  problem(): string | undefined;
}

/** Wraps a probe that throws when not ready into a cached, single-flight readiness check. */
export function createCachedProbe(
  probe: () => Promise<void>,
  options: { ttlMs: number; logger: Logger; now?: () => number },
): CachedProbe {
  const now = options.now ?? Date.now;
  let ready: boolean | undefined;
  let problem: string | undefined;
  let checkedAt = 0;
  let running: Promise<boolean> | undefined;

  const refresh = (): Promise<boolean> => {
    running ??= probe()
      .then(
        () => {
          problem = undefined;
          return true;
        },
        (error: unknown) => {
          options.logger.warn({ err: error }, 'sandbox backend probe failed');
          // Only what names a missing host capability is published; other failures may name hosts.
          problem = error instanceof HostLimitUnavailableError ? error.message : undefined;
          return false;
        },
      )
      .then((result) => {
        ready = result;
        checkedAt = now();
        running = undefined;
        return result;
      });
    return running;
  };

  return {
    async isReady() {
      if (ready === undefined) return refresh();
      if (now() - checkedAt > options.ttlMs) void refresh();
      return ready;
    },
    problem: () => problem,
  };
}
