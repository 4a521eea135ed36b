/**
 * The default number of files a workspace may hold, a ground-floor formula shared by the
 * configuration (the default of `MORDN_SANDBOX_WORKSPACE_MAX_FILES`) and the quota filesystem's
 * layout. It imports nothing, so the configuration need not import the sandbox modules.
 */

/** A default file count per byte of quota: ext4's own default inode ratio. */
const BYTES_PER_DEFAULT_FILE = 16 * 1024;
const MIN_DEFAULT_FILES = 1024;

/**
 * The file count a quota gets unless the operator sets MORDN_SANDBOX_WORKSPACE_MAX_FILES: one per
 * 16 KiB of quota (ext4's own default ratio), at least 1024. Its inode tables take 1/64 of the
 * quota, which the layout fits within the allocation bound for every quota from 1 MiB to 1 TiB.
 *
 * @example
 * defaultMaxFiles(1024 ** 3); // → 65536
 * defaultMaxFiles(5 * 1024 ** 2); // → 1024
 */
export function defaultMaxFiles(maxBytes: number): number {
  return Math.max(MIN_DEFAULT_FILES, Math.floor(maxBytes / BYTES_PER_DEFAULT_FILE));
}
