import { setTimeout as delay } from 'node:timers/promises';

/**
 * Reads `read()` every `intervalMs` until `accept` takes its value or `timeoutMs` has passed, and
 * returns the last value read (so the caller's assertion shows what was there in the end).
 *
 * @example
 * const files = await pollUntil(() => readdir(tempDir), (names) => names.length === 0, { timeoutMs: 5_000 });
 * expect(files).toEqual([]);
 */
export async function pollUntil<T>(
  read: () => T | Promise<T>,
  accept: (value: T) => boolean,
  options: { timeoutMs: number; intervalMs?: number },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() >= deadline) return value;
    await delay(options.intervalMs ?? 50);
  }
}

/** `pollUntil` for a yes/no check: whether it held within `timeoutMs`. */
export function eventually(
  check: () => boolean | Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number },
) {
  return pollUntil(check, (held) => held, options);
}
