import { randomUUID } from 'node:crypto';
import { chmod, lstat, rename, rmdir, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from './quota-commands.js';
import { ensureDirectory, MOUNTED_SPARE_PREFIX } from './quota-housekeeping.js';
import { type MountedImage, mountImage, setReservedClusters, unmountAll } from './quota-mounting.js';

const MOVE_TIMEOUT_MS = 30_000;

/**
 * A new, empty workspace filesystem mounted before any workspace is known, so that a sandbox can
 * be started over it ahead of need. It becomes a workspace's own when `claimMountedSpare` gives
 * its image the workspace's name and `moveMountedSpare` moves its mount into the workspace's place.
 */
export interface MountedSpare {
  /** The image, under a temporary name in `.images`. */
  image: string;
  /** Where it is mounted meanwhile: `.images/.mounted-<uuid>`, reachable only by root. */
  mountPoint: string;
  mounted: MountedImage;
  /** Unmounts it and deletes its image and mount point (a spare no workspace took). Never rejects. */
  discard(): Promise<void>;
}

/**
 * Mounts `image` (complete, under a temporary name, this caller's alone) at a fresh mount point
 * in `images`, ready as a new workspace's filesystem is: its reserve set, mke2fs's root-owned
 * lost+found gone, its root 0700. On failure nothing is left behind, the image included.
 *
 * @example
 * const spare = await mountSpare(await newImage(), imagesDirectory);
 */
export async function mountSpare(image: string, images: string): Promise<MountedSpare> {
  const mountPoint = path.join(images, `${MOUNTED_SPARE_PREFIX}${randomUUID()}`);
  const discard = async () => {
    await unmountAll(mountPoint).catch(() => undefined);
    await rmdir(mountPoint).catch(() => undefined);
    await unlink(image).catch(() => undefined);
  };
  try {
    await ensureDirectory(mountPoint, 0o700);
    const mounted = await mountImage(image, mountPoint);
    await setReservedClusters(mounted);
    const lostAndFound = path.join(mountPoint, 'lost+found');
    if ((await lstat(lostAndFound).catch(() => undefined))?.uid === 0) await rmdir(lostAndFound);
    await chmod(mountPoint, 0o700);
    // Its age is what the leftover sweep goes by: from now, not from when the image was made.
    const now = new Date();
    await utimes(image, now, now);
    await utimes(mountPoint, now, now);
    return { image, mountPoint, mounted, discard };
  } catch (error) {
    await discard();
    throw error;
  }
}

/**
 * Makes the spare the workspace's: its image takes the workspace's name (a rename, not a link:
 * the loop device names its backing file by the path it was opened under, and follows a rename).
 * The caller holds the workspace's lock and has seen that it has no image; the spare's mount then
 * moves into place with `moveMountedSpare`, still under that lock.
 *
 * @example
 * await claimMountedSpare(spare, { image: '.images/ws_1.ext4', mountPoint: 'ws_1' });
 */
export async function claimMountedSpare(
  spare: MountedSpare,
  places: { image: string; mountPoint: string },
): Promise<void> {
  await ensureDirectory(places.mountPoint, 0o700);
  await rename(spare.image, places.image);
}

/**
 * Moves a claimed spare's mount to the workspace's mount point. Sandboxes already running over it
 * keep their own mount of the same filesystem, whatever happens to the host's. Where the mount
 * cannot be moved (its parent is a shared mount), it is bound there and the spare's own mount
 * taken off. Should this fail, the image still has the workspace's name: the next `ensure` mounts
 * it at its place as after a restart, and the sweep takes the spare's mount.
 *
 * @example
 * await moveMountedSpare(spare, { mountPoint: 'ws_1' });
 */
export async function moveMountedSpare(spare: MountedSpare, places: { mountPoint: string }): Promise<void> {
  await runCommand('mount', ['--move', spare.mountPoint, places.mountPoint], { timeoutMs: MOVE_TIMEOUT_MS }).catch(
    async () => {
      await runCommand('mount', ['--bind', spare.mountPoint, places.mountPoint], { timeoutMs: MOVE_TIMEOUT_MS });
      await runCommand('umount', [spare.mountPoint], { timeoutMs: MOVE_TIMEOUT_MS });
    },
  );
  await rmdir(spare.mountPoint).catch(() => undefined);
}
