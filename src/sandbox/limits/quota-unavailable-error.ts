/**
 * This host cannot give each workspace its own size-limited filesystem. The message says exactly
 * why (not root, no loop devices, a missing tool, a mount the kernel refused), because it is
 * shown as is by /readyz and in the log, and the caller marks sandboxes unavailable.
 *
 * @example
 * try {
 *   await quota.probe();
 * } catch (error) {
 *   if (error instanceof QuotaUnavailableError) logger.warn(error.message);
 * }
 */
export class QuotaUnavailableError extends Error {
  override readonly name = 'QuotaUnavailableError';
}
