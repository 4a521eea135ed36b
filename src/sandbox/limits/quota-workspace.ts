import { randomUUID } from 'node:crypto';
import { chmod, chown, lstat, readdir, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { CommandError } from './quota-commands.js';
import { discardDirectory, ensureDirectory, MIGRATING_PREFIX } from './quota-housekeeping.js';
import { copyTree, growImage, placeImage } from './quota-images.js';
import type { QuotaLayout } from './quota-layout.js';
import { claimMountedSpare, type MountedSpare, moveMountedSpare } from './quota-mounted-spares.js';
import {
  findMountedImage,
  isMountPoint,
  type MountedImage,
  mountImage,
  setReservedClusters,
  unmountAll,
} from './quota-mounting.js';

/** Where one workspace's parts are. */
export interface WorkspacePlaces {
  /** The workspaces' directory (absolute, no symlinks). */
  root: string;
  mountPoint: string;
  image: string;
  lock: string;
  /** `.images`, where images are made. */
  images: string;
}

/** What the operations below share: the configuration and a source of new images. */
export interface WorkspaceContext {
  layout: QuotaLayout;
  maxBytes: number;
  /** Who owns each filesystem's root: the user sandboxes run as. */
  owner: { uid: number; gid: number };
  /** A complete new image under a temporary name (a spare, or made now). */
  newImage: () => Promise<string>;
  onWarning?: (message: string) => void;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function grow(context: WorkspaceContext, image: string, mounted: MountedImage | undefined): Promise<void> {
  await growImage({ image, maxBytes: context.maxBytes, ...(mounted ? { mounted } : {}) }).catch((error: unknown) => {
    const later = mounted ? ' while mounted (it grows when next mounted)' : '';
    context.onWarning?.(`${image} could not be grown to hold ${context.maxBytes} bytes${later}: ${messageOf(error)}`);
  });
}

/**
 * Copies an old-layout workspace directory into a new image and puts the image in its place;
 * the directory goes only once the complete image has its name. When the files do not fit (or
 * anything else fails), nothing changes and the error says so.
 */
async function migrate(context: WorkspaceContext, places: WorkspacePlaces, workspaceId: string): Promise<void> {
  const temporary = await context.newImage();
  const staging = path.join(places.images, `${MIGRATING_PREFIX}${workspaceId}-${randomUUID()}`);
  try {
    await ensureDirectory(staging, 0o700);
    await mountImage(temporary, staging);
    try {
      await rmdir(path.join(staging, 'lost+found'));
      await copyTree(places.mountPoint, staging);
      // The copy gave the root the old directory's owner; the sandbox user must be able to write there.
      await chown(staging, context.owner.uid, context.owner.gid);
    } finally {
      await unmountAll(staging);
    }
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    const full = error instanceof CommandError && /No space left on device/.test(error.stderr);
    const why = full
      ? `its files do not fit in ${context.maxBytes} bytes and ${context.layout.maxFiles} files`
      : 'copying its files failed';
    throw new Error(
      `${places.mountPoint} was not moved into its own filesystem: ${why}; the directory stays as it was. ${messageOf(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    await rmdir(staging).catch(() => undefined);
  }
  await placeImage(temporary, places.image);
  await discardDirectory(places.root, workspaceId);
}

/**
 * Brings the workspace's filesystem to mounted, whatever state a previous process (or a crash
 * between two steps) left it in, and returns its mount point; undefined when it has none and
 * `create` is false. The caller holds the workspace's lock.
 *
 * | found                                        | done                                       |
 * |----------------------------------------------|--------------------------------------------|
 * | the image mounted                            | grown online if need be                    |
 * | an image, its mount point missing or empty   | grown offline if need be, mounted          |
 * | an image, files under its mount point        | the files discarded (a migration's leftover), mounted |
 * | no image, a directory with files             | migrated into a new image, mounted         |
 * | no image, nothing or an empty directory      | a new image placed and mounted (`create`): `adopt`'s mounted spare when it has one |
 *
 * An adopted spare is the workspace's once this resolves, but its mount is still `moving` into
 * place: the caller keeps the lock until that settles.
 * @example
 * const release = await holdLock(places.lock);
 * const opened = await openWorkspace(context, places, 'ws_1', true).finally(release);
 */
export async function openWorkspace(
  context: WorkspaceContext,
  places: WorkspacePlaces,
  workspaceId: string,
  create: boolean,
  adopt?: () => Promise<MountedSpare | undefined>,
): Promise<{ mountPoint: string; device: number; moving?: Promise<void> } | undefined> {
  const { mountPoint, image } = places;
  let mounted = await findMountedImage(mountPoint, image);
  if (mounted) {
    await grow(context, image, mounted);
  } else {
    const point = await lstat(mountPoint).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    });
    if (point && !point.isDirectory()) throw new Error(`${mountPoint} is not a directory; it was left as it is.`);
    const hasImage = (await lstat(image).catch(() => undefined)) !== undefined;
    const hasFiles = point !== undefined && (await readdir(mountPoint)).length > 0;
    const spare = !hasImage && !hasFiles && create ? await adopt?.() : undefined;
    if (spare) {
      await claimMountedSpare(spare, places).catch(async (error: unknown) => {
        await spare.discard();
        throw error;
      });
      // Everything else was done when the spare was mounted; its mount moves while the caller goes on.
      return { mountPoint, device: (await stat(spare.mountPoint)).dev, moving: moveMountedSpare(spare, places) };
    } else {
      let fresh = false;
      if (!hasImage && hasFiles) await migrate(context, places, workspaceId);
      else if (!hasImage && !create) return undefined;
      else if (!hasImage) fresh = await placeImage(await context.newImage(), image);
      else if (hasFiles) await discardDirectory(places.root, workspaceId);
      await ensureDirectory(mountPoint, 0o700);
      if (!fresh) await grow(context, image, undefined);
      mounted = await mountImage(image, mountPoint);
      if (fresh) await chmod(mountPoint, 0o700);
    }
  }
  await setReservedClusters(mounted);
  // mke2fs's lost+found is a root-owned directory the workspace cannot open; e2fsck makes one when it needs it.
  const lostAndFound = path.join(mountPoint, 'lost+found');
  if ((await lstat(lostAndFound).catch(() => undefined))?.uid === 0) await rmdir(lostAndFound).catch(() => undefined);
  return { mountPoint, device: (await stat(mountPoint)).dev };
}

/**
 * Unmounts the workspace and deletes its image, mount point (or old-layout directory) and lock
 * file. Missing parts are fine. The caller holds the workspace's lock (and may delete its file).
 *
 * @example
 * const release = await holdLock(places.lock);
 * await removeWorkspace(places, 'ws_1').finally(release);
 */
export async function removeWorkspace(places: WorkspacePlaces, workspaceId: string): Promise<void> {
  const { mountPoint, image } = places;
  await unmountAll(mountPoint);
  await unlink(image).catch((error: unknown) => {
    if (errorCode(error) !== 'ENOENT') throw error;
  });
  const point = await lstat(mountPoint).catch(() => undefined);
  if (point && !point.isDirectory()) await unlink(mountPoint);
  else if (point) {
    if (await isMountPoint(mountPoint)) throw new Error(`${mountPoint} is still a mount point; it was not removed.`);
    await rmdir(mountPoint).catch(async (error: unknown) => {
      // Not empty: a plain workspace directory of the old layout.
      if (errorCode(error) !== 'ENOTEMPTY' && errorCode(error) !== 'EEXIST') throw error;
      await discardDirectory(places.root, workspaceId);
    });
  }
  await unlink(places.lock).catch(() => undefined);
}
