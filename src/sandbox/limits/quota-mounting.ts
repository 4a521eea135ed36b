import { readdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { MOUNT_OPTIONS, runCommand } from './quota-commands.js';
import { reservedClustersFor } from './quota-layout.js';
import { loopDeviceName, type MountEntry, mountsAt } from './quota-mounts.js';

const MOUNT_TIMEOUT_MS = 60_000;
const UNMOUNT_TIMEOUT_MS = 30_000;
/** How long `unmountAll` waits for the kernel to free the loop devices it unmounted. */
const DETACH_WAIT_MS = 2000;
const DETACH_POLL_MS = 20;
/** Mounts stacked at one mount point that `unmountAll` takes off before it gives up. */
const MAX_STACKED_MOUNTS = 16;

/** A workspace image as mounted: its loop device and where. */
export interface MountedImage {
  /** `/dev/loopN`. */
  device: string;
  /** `loopN`, its name under /sys. */
  loopName: string;
  mountPoint: string;
}

async function mountTable(): Promise<string> {
  return readFile('/proc/self/mountinfo', 'utf8');
}

function describeMount(entry: MountEntry): string {
  const root = entry.root === '/' ? '' : ` (its ${entry.root})`;
  return `a ${entry.fsType} filesystem from ${entry.source}${root}`;
}

/**
 * The image mounted at `mountPoint`, or undefined when nothing is mounted there. Throws when
 * something else is (another filesystem, a bind of a subdirectory, a loop device over another
 * file): that is never ours to use or to cover.
 *
 * @example
 * const mounted = await findMountedImage('/srv/workspaces/ws_1', '/srv/workspaces/.images/ws_1.ext4');
 */
export async function findMountedImage(mountPoint: string, image: string): Promise<MountedImage | undefined> {
  const top = mountsAt(await mountTable(), mountPoint).at(-1);
  if (!top) return undefined;
  const loopName = loopDeviceName(top.source);
  const backingFile = loopName ? await backingFileOf(loopName) : undefined;
  if (!loopName || top.fsType !== 'ext4' || top.root !== '/' || backingFile !== image) {
    throw new Error(`${mountPoint} has ${describeMount(top)} mounted on it, not the workspace image ${image}.`);
  }
  return { device: top.source, loopName, mountPoint };
}

/**
 * Mounts `image` at `mountPoint` (see `MOUNT_OPTIONS`; naming the type spares util-linux probing
 * for it, half the time of a mount) and returns the mount. The caller holds the image's lock
 * (`holdLock`): util-linux reuses a loop device already attached to the image, but its check and
 * its attach are two steps that another process could come between.
 *
 * @example
 * const mounted = await mountImage(image, mountPoint);
 */
export async function mountImage(image: string, mountPoint: string): Promise<MountedImage> {
  await runCommand('mount', ['-t', 'ext4', '-o', MOUNT_OPTIONS, image, mountPoint], { timeoutMs: MOUNT_TIMEOUT_MS });
  const mounted = await findMountedImage(mountPoint, image);
  if (!mounted) throw new Error(`mount reported success, but nothing is mounted at ${mountPoint}.`);
  return mounted;
}

/**
 * Takes every mount off `mountPoint` (normally one; more if something mounted over it), then
 * waits a moment for the kernel to free their loop devices (autoclear does it off the unmount's
 * path). A device that stays attached is held elsewhere, by a mount in another namespace that
 * bound the workspace; it is freed when that goes. Resolves with the devices still attached.
 *
 * @example
 * await unmountAll('/srv/workspaces/ws_1');
 */
export async function unmountAll(mountPoint: string): Promise<string[]> {
  /** Each unmounted loop device and the file it was backed by (it may be reused for another soon). */
  const devices = new Map<string, string>();
  for (let round = 0; ; round += 1) {
    const mounts = mountsAt(await mountTable(), mountPoint);
    if (mounts.length === 0) break;
    if (round === MAX_STACKED_MOUNTS) {
      throw new Error(`${mountPoint} still has mounts after ${MAX_STACKED_MOUNTS} unmounts.`);
    }
    const name = loopDeviceName(mounts.at(-1)?.source ?? '');
    if (name) devices.set(name, await backingFileOf(name));
    await runCommand('umount', [mountPoint], { timeoutMs: UNMOUNT_TIMEOUT_MS });
  }
  return waitForDetach(devices);
}

async function backingFileOf(name: string): Promise<string> {
  return (await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(() => '')).trim();
}

/** Polls the loop devices until the kernel has let go of them, for at most `DETACH_WAIT_MS`. */
async function waitForDetach(devices: Map<string, string>): Promise<string[]> {
  const deadline = Date.now() + DETACH_WAIT_MS;
  let attached = [...devices.keys()];
  for (;;) {
    const files = await Promise.all(attached.map(backingFileOf));
    attached = attached.filter((name, index) => files[index] !== '' && files[index] === devices.get(name));
    if (attached.length === 0 || Date.now() >= deadline) return attached.map((name) => `/dev/${name}`);
    await delay(DETACH_POLL_MS);
  }
}

/**
 * Sets ext4's emergency reserve of the mounted filesystem to what the layout counted on (see
 * `MAX_RESERVED_CLUSTERS`). The kernel picks its own at every mount, so this follows each mount.
 *
 * @example
 * await setReservedClusters(mounted);
 */
export async function setReservedClusters(mounted: MountedImage): Promise<void> {
  const { blocks } = await statfs(mounted.mountPoint);
  const file = `/sys/fs/ext4/${mounted.loopName}/reserved_clusters`;
  await writeFile(file, String(reservedClustersFor(blocks))).catch((error: unknown) => {
    throw new Error(`Could not set ${file}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  });
}

/**
 * The loop devices (`/dev/loopN`) backed by `image`, mounted here or not: a mount in another
 * mount namespace (a container that bound the workspace) keeps its device attached after the
 * mount here is gone.
 *
 * @example
 * if ((await loopDevicesOf(image)).length > 0) return; // in use somewhere: not for offline tools
 */
export async function loopDevicesOf(image: string): Promise<string[]> {
  const names = (await readdir('/sys/block').catch(() => [] as string[])).filter((name) =>
    loopDeviceName(`/dev/${name}`),
  );
  const devices: string[] = [];
  for (const name of names) {
    if ((await backingFileOf(name)) === image) devices.push(`/dev/${name}`);
  }
  return devices;
}

/**
 * Whether `directory` is the root of a filesystem other than its parent's (a mount point).
 *
 * @example
 * if (await isMountPoint(mountPoint)) throw new Error('still mounted');
 */
export async function isMountPoint(directory: string): Promise<boolean> {
  const [own, parent] = await Promise.all([stat(directory), stat(path.dirname(directory))]);
  return own.dev !== parent.dev;
}
