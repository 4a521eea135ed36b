/** Paces the bytes of one workspace's connections: what they may move, and when. */
export interface BandwidthLimiter {
  /** Takes `bytes` and returns how many milliseconds to wait before moving them (0: at once). */
  reserve(bytes: number): number;
}

/**
 * A token bucket of `bytesPerSecond`, with a burst of a tenth of a second's worth (at least one
 * 64 KiB frame): a workspace's transfers, both ways together, average at most the rate, so one
 * workspace cannot take the service's event loop from its other work (chat streams, the other
 * workspaces). Reservations queue: a caller that waits has its bytes counted already.
 *
 * @example
 * const limiter = createBandwidthLimiter(100 * 1024 * 1024);
 * setTimeout(send, limiter.reserve(chunk.length));
 */
export function createBandwidthLimiter(
  bytesPerSecond: number,
  now: () => number = () => performance.now(),
): BandwidthLimiter {
  const burst = Math.max(64 * 1024, bytesPerSecond / 10);
  let tokens = burst;
  let last = now();
  return {
    reserve(bytes) {
      const at = now();
      tokens = Math.min(burst, tokens + ((at - last) * bytesPerSecond) / 1000);
      last = at;
      tokens -= bytes;
      return tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / bytesPerSecond);
    },
  };
}
