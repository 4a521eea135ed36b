import { randomUUID } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from './quota-commands.js';
import { TEMPORARY_IMAGE_PREFIX } from './quota-images.js';
import { holdLock } from './quota-lock.js';
import { unmountAll } from './quota-mounting.js';
import { SPARE_PREFIX } from './quota-spares.js';

/** Names beside the workspaces that no workspace id can take (ids have no dots). */
export const DISCARDED_PREFIX = '.discarded-';
export const MIGRATING_PREFIX = '.migrating-';
export const PROBE_PREFIX = '.probe-';
/** Mount points of spare filesystems mounted ahead of need (see `quota-mounted-spares.ts`). */
export const MOUNTED_SPARE_PREFIX = '.mounted-';
/** Leftovers older than this belong to no running operation (the slowest, a migration's copy, times out sooner). */
const STALE_MS = 2 * 60 * 60_000;
const DISCARD_TIMEOUT_MS = 60 * 60_000;

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/**
 * Deletes a plain directory of workspace files (an old-layout workspace, or what a finished
 * migration left): renamed aside first, so its name is free at once and nobody sees half of it,
 * then removed by `rm --one-file-system`, which walks by directory handles and never follows a
 * symlink or enters another filesystem. A mount point cannot be renamed (EBUSY), so a mounted
 * filesystem is never what this deletes.
 *
 * @example
 * await discardDirectory('/srv/workspaces', 'ws_1');
 */
export async function discardDirectory(root: string, workspaceId: string): Promise<void> {
  const aside = path.join(root, `${DISCARDED_PREFIX}${workspaceId}-${randomUUID()}`);
  try {
    await rename(path.join(root, workspaceId), aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  await runCommand('rm', ['-rf', '--one-file-system', '--', aside], { timeoutMs: DISCARD_TIMEOUT_MS });
}

/** Deletes the lock file of a workspace that has neither image nor mount point, holding it (see `holdLock`). */
async function removeOrphanLock(paths: { root: string; images: string }, workspaceId: string): Promise<void> {
  const lock = path.join(paths.images, `${workspaceId}.lock`);
  const release = await holdLock(lock);
  try {
    const image = await lstat(path.join(paths.images, `${workspaceId}.ext4`)).catch(() => undefined);
    const mountPoint = await lstat(path.join(paths.root, workspaceId)).catch(() => undefined);
    if (!image && !mountPoint) await unlink(lock);
  } finally {
    await release();
  }
}

/**
 * Clears what crashed operations left behind, once they are old enough to be nobody's: temporary
 * and probe images, staging mounts of migrations, mounted spares, discarded directories, spares of another
 * layout, and lock files of workspaces that no longer exist. None of them stands in the way of
 * `ensure` (their names are unique); this only gives their space back. Never throws.
 *
 * @example
 * await sweepLeftovers({ root: '/srv/workspaces', images: '/srv/workspaces/.images' }, { sparePrefix });
 */
export async function sweepLeftovers(
  paths: { root: string; images: string },
  current: { sparePrefix: string },
  now = Date.now(),
): Promise<void> {
  const quietly = (work: Promise<unknown>) =>
    work.then(
      () => undefined,
      () => undefined,
    );
  const names = await readdir(paths.images).catch(() => [] as string[]);
  const present = new Set(names);
  for (const name of names) {
    // Workspace images and the locks of existing workspaces: nothing to look at.
    if (!name.startsWith('.') && (name.endsWith('.ext4') || present.has(name.replace(/\.lock$/, '.ext4')))) continue;
    const entry = path.join(paths.images, name);
    const info = await lstat(entry).catch(() => undefined);
    if (!info || now - info.mtimeMs <= STALE_MS) continue;
    if (info.isDirectory()) {
      if (name.startsWith(MIGRATING_PREFIX) || name.startsWith(PROBE_PREFIX) || name.startsWith(MOUNTED_SPARE_PREFIX)) {
        await quietly(unmountAll(entry).then(() => rmdir(entry)));
      }
    } else if (
      name.startsWith(TEMPORARY_IMAGE_PREFIX) ||
      name.startsWith(PROBE_PREFIX) ||
      (name.startsWith(SPARE_PREFIX) && !name.startsWith(current.sparePrefix))
    ) {
      await quietly(unlink(entry));
    } else if (!name.startsWith('.') && name.endsWith('.lock')) {
      await quietly(removeOrphanLock(paths, name.slice(0, -'.lock'.length)));
    }
  }
  for (const name of await readdir(paths.root).catch(() => [])) {
    if (!name.startsWith(DISCARDED_PREFIX)) continue;
    const entry = path.join(paths.root, name);
    const info = await lstat(entry).catch(() => undefined);
    if (info && now - info.mtimeMs > STALE_MS) {
      await quietly(runCommand('rm', ['-rf', '--one-file-system', '--', entry], { timeoutMs: DISCARD_TIMEOUT_MS }));
    }
  }
}

/**
 * `mkdir` that is content when the directory exists (whatever its mode).
 *
 * @example
 * await ensureDirectory('/srv/workspaces/.images', 0o700);
 */
export async function ensureDirectory(directory: string, mode: number): Promise<void> {
  await mkdir(directory, { mode }).catch((error: unknown) => {
    if (errorCode(error) !== 'EEXIST') throw error;
  });
}
