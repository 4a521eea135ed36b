/**
 * Byte counts and durations as limits are worded in messages: exact binary units where the value
 * is a whole number of them (`64 KiB`, `10 MiB`), bytes otherwise.
 *
 * @example
 * formatBytes(10 * 1024 * 1024); // '10 MiB'
 */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * A duration in whole seconds where it is one, milliseconds otherwise.
 *
 * @example
 * formatDuration(30_000); // '30 s'
 */
export function formatDuration(milliseconds: number): string {
  return milliseconds % 1000 === 0 ? `${milliseconds / 1000} s` : `${milliseconds} ms`;
}
