import type { BuiltTools } from './types.js';

/**
 * Holds the tool connections of one request and closes each exactly once, on every path: normal
 * finish, setup failure, abort — and late arrival, when a connection finishes opening after the
 * request was already given up (it is closed as soon as it arrives). Closing releases connections
 * only; it never touches a sandbox.
 */
export function createToolLease(signal: AbortSignal) {
  const held: BuiltTools[] = [];
  let released = false;
  const closeOne = (tools: BuiltTools) => tools.close().catch(() => undefined);

  return {
    /** Waits for `opening` unless the request is aborted first; either way it gets closed later. */
    async hold(opening: Promise<BuiltTools>): Promise<BuiltTools> {
      const arrived = opening.then((tools) => {
        if (released || signal.aborted) void closeOne(tools);
        else held.push(tools);
        return tools;
      });
      if (signal.aborted) throw signal.reason;
      return new Promise<BuiltTools>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        arrived.then(
          (tools) => {
            signal.removeEventListener('abort', onAbort);
            resolve(tools);
          },
          (error: unknown) => {
            signal.removeEventListener('abort', onAbort);
            reject(error);
          },
        );
      });
    },
    /** Closes everything held; later arrivals close on arrival. Idempotent. */
    async release(): Promise<void> {
      if (released) return;
      released = true;
      await Promise.all(held.splice(0).map(closeOne));
    },
  };
}
