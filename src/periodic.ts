/**
 * Runs `task` now and then every `intervalMs`, without keeping the process alive; a failure is
 * handed to `onError` and the next run happens as planned. Returns the function that stops it.
 */
export function runPeriodically(
  task: () => Promise<unknown>,
  intervalMs: number,
  onError: (error: unknown) => void,
): () => void {
  const run = () => {
    task().catch(onError);
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
