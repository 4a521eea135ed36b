/** A dependency the service needs to answer requests (database, storage, sandbox backend). */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

export type CheckStatus = 'ok' | 'failed' | 'timeout';

/**
 * A failed check whose message is safe to publish: it names a missing host capability (no
 * cgroups, no seccomp), never a host name, credential or connection string.
 */
export class ExplainedReadinessFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExplainedReadinessFailure';
  }
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckStatus>;
  /** The published reasons of checks that failed with an `ExplainedReadinessFailure`. */
  reasons: Record<string, string>;
}

/**
 * Runs every check concurrently, each bounded by `timeoutMs`. Failure reasons are not reported
 * (they can name hosts or credentials) unless the check explains itself with an
 * `ExplainedReadinessFailure`; the service logs them all.
 */
export async function runReadinessChecks(
  checks: readonly ReadinessCheck[],
  options: { timeoutMs: number; onFailure?: (name: string, error: unknown) => void },
): Promise<ReadinessReport> {
  const reasons: Record<string, string> = {};
  const results = await Promise.all(
    checks.map(async ({ name, check }): Promise<[string, CheckStatus]> => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), options.timeoutMs);
      });
      try {
        const outcome = await Promise.race([check().then(() => 'ok' as const), timeout]);
        if (outcome === 'timeout') options.onFailure?.(name, new Error(`timed out after ${options.timeoutMs} ms`));
        return [name, outcome];
      } catch (error) {
        options.onFailure?.(name, error);
        if (error instanceof ExplainedReadinessFailure) reasons[name] = error.message;
        return [name, 'failed'];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return { ready: results.every(([, status]) => status === 'ok'), checks: Object.fromEntries(results), reasons };
}
