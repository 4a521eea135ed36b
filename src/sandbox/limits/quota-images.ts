import { randomUUID } from 'node:crypto';
import { link, open, stat, truncate, unlink } from 'node:fs/promises';
import path from 'node:path';
import { parseSuperblock, SUPERBLOCK_BYTES, SUPERBLOCK_OFFSET } from './ext4-superblock.js';
import { CommandError, mkfsArguments, runCommand } from './quota-commands.js';
import { BLOCK_BYTES, planGrowth, type QuotaLayout } from './quota-layout.js';
import { loopDevicesOf, type MountedImage } from './quota-mounting.js';

const MKFS_TIMEOUT_MS = 120_000;
/** e2fsck -f and resize2fs read every group; a large, full filesystem takes minutes. */
const CHECK_TIMEOUT_MS = 30 * 60_000;
const COPY_TIMEOUT_MS = 60 * 60_000;
/** e2fsck's exit status for "errors were found and fixed": the filesystem is fine now. */
const FSCK_CORRECTED = 1;
/** Names of images being made; never a workspace's (ids have no dots), so leftovers never collide. */
export const TEMPORARY_IMAGE_PREFIX = '.tmp-';

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/**
 * Makes a complete, empty image of `layout` under a fresh temporary name in `images` (mode 0600)
 * and returns its path; nothing is left behind when mkfs fails. mke2fs fsyncs the image before it
 * exits, so a host crash after `placeImage` cannot leave a named image without its metadata.
 *
 * @example
 * const temporary = await makeImage(images, planQuotaLayout(maxBytes, maxFiles), { uid: 65534, gid: 65534 });
 * await placeImage(temporary, path.join(images, 'ws_1.ext4'));
 */
export async function makeImage(
  images: string,
  layout: QuotaLayout,
  owner: { uid: number; gid: number },
): Promise<string> {
  const temporary = path.join(images, `${TEMPORARY_IMAGE_PREFIX}${randomUUID()}.ext4`);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    // Sparse: the host allocates only what mkfs and, later, the workspace write.
    await handle.truncate(layout.imageBytes);
  } finally {
    await handle.close();
  }
  try {
    await runCommand('mkfs.ext4', mkfsArguments(temporary, layout, owner), { timeoutMs: MKFS_TIMEOUT_MS });
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  return temporary;
}

/**
 * Gives a made image its final name in one step, unless an image has it already (`link` never
 * replaces: two processes making one workspace's image at once end up using the same one). The
 * temporary name is gone afterwards either way. True when this image was placed.
 *
 * @example
 * if (!(await placeImage(temporary, image))) console.log('another process made it first');
 */
export async function placeImage(temporary: string, image: string): Promise<boolean> {
  try {
    await link(temporary, image);
    return true;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
}

async function readSuperblock(file: string) {
  const handle = await open(file, 'r');
  try {
    const bytes = Buffer.alloc(SUPERBLOCK_BYTES);
    await handle.read(bytes, 0, SUPERBLOCK_BYTES, SUPERBLOCK_OFFSET);
    return parseSuperblock(bytes);
  } finally {
    await handle.close();
  }
}

/**
 * Grows the workspace's filesystem when it holds less than `maxBytes` (see `planGrowth`); never
 * shrinks it. Mounted, it grows online (the kernel wants CAP_SYS_RESOURCE); unmounted, after
 * `e2fsck -f`. The caller holds the image's lock. Resolves with the new block count, or undefined
 * when it was large enough already.
 *
 * @example
 * await growImage({ image, maxBytes, mounted });
 */
export async function growImage(target: {
  image: string;
  maxBytes: number;
  mounted?: MountedImage;
}): Promise<number | undefined> {
  const { image, mounted } = target;
  // Through the loop device when mounted: its cache holds the superblock as the kernel has it now.
  const superblock = await readSuperblock(mounted ? mounted.device : image);
  if (superblock.blockBytes !== BLOCK_BYTES) return undefined;
  const blocks = planGrowth(target.maxBytes, superblock);
  if (blocks === undefined) return undefined;
  if (!mounted) {
    // e2fsprogs see mounts in this namespace only; a loop device still attached means one elsewhere.
    const attached = await loopDevicesOf(image);
    if (attached.length > 0) throw new Error(`${image} is still in use through ${attached.join(', ')}.`);
  }
  if ((await stat(image)).size < blocks * BLOCK_BYTES) await truncate(image, blocks * BLOCK_BYTES);
  if (mounted) {
    await runCommand('losetup', ['--set-capacity', mounted.device], { timeoutMs: CHECK_TIMEOUT_MS });
    await runCommand('resize2fs', [mounted.device, String(blocks)], { timeoutMs: CHECK_TIMEOUT_MS });
    return blocks;
  }
  await runCommand('e2fsck', ['-f', '-p', image], { timeoutMs: CHECK_TIMEOUT_MS }).catch((error: unknown) => {
    if (!(error instanceof CommandError && error.exitCode === FSCK_CORRECTED)) throw error;
  });
  await runCommand('resize2fs', [image, String(blocks)], { timeoutMs: CHECK_TIMEOUT_MS });
  return blocks;
}

/**
 * Copies the contents of `source` into `target` as `cp -a` does: symlinks stay symlinks (nothing
 * is followed, so a link to /etc/passwd copies the link, not the file), and owners, modes, times,
 * hard links, sparse files and xattrs are kept. `target` itself takes `source`'s owner and mode.
 * The caller guarantees that nothing writes to `source` meanwhile.
 *
 * @example
 * await copyTree('/srv/workspaces/ws_1', '/srv/workspaces/.images/.migrating-1234');
 */
export async function copyTree(source: string, target: string): Promise<void> {
  await runCommand('cp', ['-a', '--no-dereference', '--', `${source}/.`, target], { timeoutMs: COPY_TIMEOUT_MS });
}
