/**
 * No cgroup hierarchy this service can create workspace cgroups in. The message says exactly why
 * (a missing root, a controller that is not mounted, a permission the service lacks), because it
 * is shown as is by /readyz and in the log.
 *
 * @example
 * try {
 *   await openCgroupHierarchy();
 * } catch (error) {
 *   if (error instanceof CgroupUnavailableError) logger.warn(error.message);
 * }
 */
export class CgroupUnavailableError extends Error {
  override readonly name = 'CgroupUnavailableError';
}
