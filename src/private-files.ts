import { chmodSync, closeSync, lstatSync, openSync, type Stats, statSync } from 'node:fs';

/** What the owner may do; nobody else may do anything. */
const OWNER_BITS = 0o700;
const GROUP_AND_OTHER_BITS = 0o077;
const PRIVATE_FILE_MODE = 0o600;

/** One permission change the service made, for its start-up log. */
export interface PermissionRepair {
  path: string;
  /** Permission bits before and after, in octal (`0755` → `0700`). */
  from: string;
  to: string;
}

/** A path of the service's own cannot be made private; the message names it and says why. */
export class PrivatePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PrivatePathError';
  }
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

function statIfPresent(target: string, followLinks: boolean): Stats | undefined {
  try {
    return followLinks ? statSync(target) : lstatSync(target);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Removes every group and other permission bit from `target`, never adding any, after checking
 * that the service's user owns it: a path another user owns is refused, since that user could
 * loosen it again or swap what is inside. Returns the change made, if any; a missing path is no
 * change. Without `followLinks` a symbolic link is left alone, as `chmod` would follow it out of
 * the directory being secured.
 *
 * @example
 * tightenPermissions('/srv/mordn/data/mordn.db'); // { path, from: '0644', to: '0600' }
 */
export function tightenPermissions(
  target: string,
  options: { followLinks?: boolean; label?: string } = {},
): PermissionRepair | undefined {
  const info = statIfPresent(target, options.followLinks ?? false);
  if (!info || info.isSymbolicLink()) return undefined;
  const name = options.label ? `${options.label} ${target}` : target;
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new PrivatePathError(
      `${name} belongs to uid ${info.uid}, not to the user running mordn (uid ${uid}); ` +
        'give it to that user (chown) or set MORDN_DATA_DIR to a directory it owns.',
    );
  }
  if ((info.mode & GROUP_AND_OTHER_BITS) === 0) return undefined;
  const mode = info.mode & OWNER_BITS;
  try {
    chmodSync(target, mode);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new PrivatePathError(`Cannot make ${name} private (mode ${octal(info.mode)}): ${reason}`);
  }
  return { path: target, from: octal(info.mode), to: octal(mode) };
}

/**
 * Creates `file` empty with mode 0600 when it is missing (so whatever fills it later, such as
 * SQLite, which gives its WAL and shared-memory files the database's own mode, never starts
 * from a readable default), and otherwise tightens it.
 */
export function ensurePrivateFile(file: string): PermissionRepair | undefined {
  try {
    closeSync(openSync(file, 'wx', PRIVATE_FILE_MODE));
    return undefined;
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
  }
  return tightenPermissions(file);
}
