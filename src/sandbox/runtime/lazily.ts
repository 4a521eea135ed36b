/**
 * Memoizes an async computation; a failure is not kept, so the next call retries.
 *
 * @example
 * const layout = lazily(detectHostLayout);
 * await layout(); // computed once, shared by later calls
 */
export function lazily<T>(compute: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= compute().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}
