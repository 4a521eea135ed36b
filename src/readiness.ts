/** A dependency the service needs to answer requests (database, storage, sandbox backend). */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

export type CheckStatus = 'ok' | 'failed' | 'timeout';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckStatus>;
}

/**
 * Runs every check concurrently, each bounded by `timeoutMs`. Failure reasons are not reported
 * (they can name hosts or credentials); the service logs them instead.
 */
export async function runReadinessChecks(
  checks: readonly ReadinessCheck[],
  options: { timeoutMs: number; onFailure?: (name: string, error: unknown) => void },
): Promise<ReadinessReport> {
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
        return [name, 'failed'];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return { ready: results.every(([, status]) => status === 'ok'), checks: Object.fromEntries(results) };
}
