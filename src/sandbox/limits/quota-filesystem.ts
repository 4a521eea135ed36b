import { mkdir, realpath, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { ensureDirectory, sweepLeftovers } from './quota-housekeeping.js';
import { makeImage } from './quota-images.js';
import { planQuotaLayout, RESERVED_INODES } from './quota-layout.js';
import { holdLock } from './quota-lock.js';
import { type MountedSpare, mountSpare } from './quota-mounted-spares.js';
import { unmountAll } from './quota-mounting.js';
import { probeQuotaHost } from './quota-probe.js';
import { createSpareImages } from './quota-spares.js';
import { openWorkspace, removeWorkspace, type WorkspaceContext, type WorkspacePlaces } from './quota-workspace.js';

export { defaultMaxFiles } from './quota-layout.js';
export type { MountedSpare } from './quota-mounted-spares.js';
export { QuotaUnavailableError } from './quota-unavailable-error.js';

/** Options of `createQuotaFilesystems`. */
export interface QuotaFilesystemOptions {
  /** Host directory holding each workspace's image and mount point (e.g. <dataDir>/workspaces); created when missing. */
  directory: string;
  /** MORDN_SANDBOX_WORKSPACE_MAX_BYTES: bytes each workspace can hold (at least 99 % of it is usable). */
  maxBytes: number;
  /** MORDN_SANDBOX_WORKSPACE_MAX_FILES: files and directories each workspace can hold; see `defaultMaxFiles`. */
  maxFiles: number;
  /** Owner of the filesystem's root directory (the unprivileged host user sandboxes run as); default the service's own uid/gid. */
  owner?: { uid: number; gid: number };
  /**
   * Spare images kept ready, made in the background one at a time, so that a new workspace costs
   * a rename and a mount rather than an mkfs too. Default 2; 0 makes none.
   */
  poolSize?: number;
  /** Told what went wrong without failing the call (a filesystem that could not be grown, a spare not made). */
  onWarning?: (message: string) => void;
}

/** A workspace filesystem's use and capacity, from statfs of its mount. */
export interface QuotaUsage {
  bytes: number;
  files: number;
  /** Bytes it can hold: those used plus those an unprivileged user can still write. */
  maxBytes: number;
  /** Files and directories it can hold (its root directory aside). */
  maxFiles: number;
}

/** Each workspace's own ext4 filesystem: the kernel holds its size and file count, whatever runs inside. */
export interface QuotaFilesystems {
  /**
   * Fails with QuotaUnavailableError when this host cannot provide quota filesystems (not root,
   * no loop devices, a missing tool); the message says why. Makes and mounts a scratch image to
   * prove it and cleans up; also clears what crashed operations left and starts the spare pool.
   */
  probe(): Promise<void>;
  /**
   * Creates (first time) and mounts the workspace's filesystem; returns the host mount point.
   * Idempotent, and one stat once mounted. Reuses a mount that outlived the service, mounts an
   * image again after a reboot, grows a filesystem smaller than `maxBytes` (never shrinks one),
   * and migrates a plain directory of the old layout into a new filesystem. A workspace that has
   * nothing yet takes the filesystem `options.adopt` hands over, when it hands one (see `mountSpare`).
   */
  ensure(workspaceId: string, options?: { adopt?: () => Promise<MountedSpare | undefined> }): Promise<string>;
  /**
   * A new empty filesystem (from the spare images), mounted where no workspace is, for a sandbox
   * to start over before its workspace is known; `ensure`'s `adopt` later makes it one's own.
   */
  mountSpare(): Promise<MountedSpare>;
  /** The mount point if the workspace has a filesystem (mounting or migrating it as `ensure` does); undefined when it has none. */
  existing(workspaceId: string): Promise<string | undefined>;
  /** Unmounts (and frees the loop device); the image stays. The caller stops every sandbox using it first. */
  unmount(workspaceId: string): Promise<void>;
  /** Unmounts and deletes the image and mount point (an old-layout directory too). Missing is fine. */
  remove(workspaceId: string): Promise<void>;
  /** Bytes and files in use (statfs of the mount); throws when the workspace has no filesystem. */
  usage(workspaceId: string): Promise<QuotaUsage>;
  /** Stops making spare images (for shutdown); mounted filesystems stay mounted (see `unmountOpened`). */
  close(): Promise<void>;
  /**
   * Unmounts every workspace filesystem this process mounted or used, after what was still under
   * way on it (for shutdown, once no sandbox of this process runs over them): the data directory
   * then holds files only. Images stay; the next `ensure` mounts them again. Resolves with one
   * line per workspace that could not be unmounted, saying why.
   */
  unmountOpened(): Promise<string[]>;
}

/** Ids are service-made (`ws_…`); never a dot, so `.images` and other bookkeeping names stay free. */
const WORKSPACE_ID = /^[A-Za-z0-9_-]{1,64}$/;
const DEFAULT_POOL_SIZE = 2;
/** The inode of every ext4 root directory: a mount point showing it has its filesystem mounted. */
const ROOT_INODE = 2;

function requireWorkspaceId(workspaceId: string): void {
  if (typeof workspaceId !== 'string' || !WORKSPACE_ID.test(workspaceId)) {
    throw new TypeError('Invalid workspace id: expected 1-64 characters of [A-Za-z0-9_-].');
  }
}

type OperationKind = 'ensure' | 'existing' | 'change';

function noop(): void {}

/**
 * Per-workspace filesystems under `options.directory`: the workspace `ws_1` is the ext4 image
 * `.images/ws_1.ext4` mounted at `ws_1`, the same path a plain workspace directory had, so
 * sandboxes bind it as before (and, binding a filesystem's root, show no host path inside).
 * Images live apart in `.images` (mode 0700, images 0600), so that the workspaces' directory
 * lists workspaces only and one listing finds every image and leftover. Sizes: `planQuotaLayout`.
 *
 * Calls for one workspace take turns (two `ensure`s share one operation), and each change holds
 * the workspace's lock file, so service replicas on one host take turns too. New images are made
 * under temporary names and linked into place only when complete, so a crash at any step leaves
 * nothing that the next `ensure` trips over.
 *
 * @example
 * const quota = createQuotaFilesystems({ directory: '/srv/mordn/workspaces', maxBytes: 1024 ** 3, maxFiles: 65_536, owner: { uid: 65534, gid: 65534 } });
 * await quota.probe();
 * const mountPoint = await quota.ensure('ws_0123'); // → '/srv/mordn/workspaces/ws_0123'
 * await quota.usage('ws_0123'); // → { bytes: 4096, files: 0, maxBytes: 1072222208, maxFiles: 65510 }
 */
export function createQuotaFilesystems(options: QuotaFilesystemOptions): QuotaFilesystems {
  const layout = planQuotaLayout(options.maxBytes, options.maxFiles);
  const owner = options.owner ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  /** The st_dev of each workspace's root as this process last mounted or found it: the fast path. */
  const mountedDevices = new Map<string, number>();
  const operations = new Map<string, { kind: OperationKind; promise: Promise<unknown> }>();

  let prepared: Promise<{ root: string; images: string }> | undefined;
  let swept: Promise<void> | undefined;
  const prepare = () => {
    prepared ??= (async () => {
      await mkdir(options.directory, { recursive: true, mode: 0o700 });
      // As the kernel names paths in mountinfo and loop backing files: absolute, no symlinks.
      const root = await realpath(options.directory);
      const images = path.join(root, '.images');
      await ensureDirectory(images, 0o700);
      return { root, images };
    })().catch((error: unknown) => {
      prepared = undefined;
      throw error;
    });
    return prepared;
  };

  const spares = createSpareImages({
    images: async () => (await prepare()).images,
    layout,
    owner,
    size: options.poolSize ?? DEFAULT_POOL_SIZE,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  });
  const context: WorkspaceContext = {
    layout,
    maxBytes: options.maxBytes,
    owner,
    newImage: async () => (await spares.take()) ?? (await makeImage((await prepare()).images, layout, owner)),
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  };

  /**
   * One operation after the other per workspace. A call that would do what the last one queued
   * does joins it instead: an `ensure` joins an `ensure`, an `existing` either.
   */
  const serialize = <T>(workspaceId: string, kind: OperationKind, run: () => Promise<T>): Promise<T> => {
    const current = operations.get(workspaceId);
    if (current && kind !== 'change' && (current.kind === 'ensure' || current.kind === kind)) {
      return current.promise as Promise<T>;
    }
    const promise = (current ? current.promise.then(noop, noop) : Promise.resolve()).then(run);
    const entry = { kind, promise };
    operations.set(workspaceId, entry);
    const forget = () => {
      if (operations.get(workspaceId) === entry) operations.delete(workspaceId);
    };
    promise.then(forget, forget);
    return promise;
  };

  /** Adopted spares' mounts on their way into place; every later operation on the workspace waits for its own. */
  const moving = new Map<string, Promise<void>>();

  /**
   * Runs `work` under the workspace's lock file, which other processes on this host take too.
   * `work` may hand over a promise the lock is kept for after it returns (`holdUntil`).
   */
  const locked = async <T>(
    workspaceId: string,
    work: (places: WorkspacePlaces, holdUntil: (settled: Promise<void>) => void) => Promise<T>,
  ): Promise<T> => {
    const { root, images } = await prepare();
    const places: WorkspacePlaces = {
      root,
      images,
      mountPoint: path.join(root, workspaceId),
      image: path.join(images, `${workspaceId}.ext4`),
      lock: path.join(images, `${workspaceId}.lock`),
    };
    const release = await holdLock(places.lock);
    let until: Promise<void> | undefined;
    try {
      return await work(places, (settled) => {
        until = settled;
      });
    } finally {
      if (until) void until.then(release).catch(noop);
      else await release();
    }
  };

  /** The mount point, when this process mounted it and it still is: one stat, no lock. */
  const alreadyMounted = async (workspaceId: string): Promise<string | undefined> => {
    const device = mountedDevices.get(workspaceId);
    if (device === undefined || operations.has(workspaceId) || !prepared) return undefined;
    const mountPoint = path.join((await prepared).root, workspaceId);
    const info = await stat(mountPoint).catch(() => undefined);
    if (info?.dev === device && info.ino === ROOT_INODE) return mountPoint;
    mountedDevices.delete(workspaceId);
    return undefined;
  };

  const open = async (
    workspaceId: string,
    create: boolean,
    adopt?: () => Promise<MountedSpare | undefined>,
  ): Promise<string | undefined> => {
    requireWorkspaceId(workspaceId);
    await moving.get(workspaceId);
    const fast = await alreadyMounted(workspaceId);
    if (fast) return fast;
    return serialize(workspaceId, create ? 'ensure' : 'existing', () =>
      locked(workspaceId, async (places, holdUntil) => {
        const opened = await openWorkspace(context, places, workspaceId, create, adopt);
        if (opened) mountedDevices.set(workspaceId, opened.device);
        if (opened?.moving) {
          const settled = opened.moving.catch((error: unknown) => {
            mountedDevices.delete(workspaceId);
            options.onWarning?.(
              `The mount of workspace ${workspaceId} did not move into place (the next use mounts it there): ${(error as Error).message}`,
            );
          });
          moving.set(workspaceId, settled);
          void settled.then(() => {
            if (moving.get(workspaceId) === settled) moving.delete(workspaceId);
          });
          holdUntil(settled);
        }
        return opened?.mountPoint;
      }),
    );
  };

  /** Unmounts (and, with `remove`, deletes) the workspace; the fast path forgets it first. */
  const close = async (workspaceId: string, remove: boolean): Promise<void> => {
    requireWorkspaceId(workspaceId);
    await moving.get(workspaceId);
    return serialize(workspaceId, 'change', () =>
      locked(workspaceId, async (places) => {
        mountedDevices.delete(workspaceId);
        await (remove ? removeWorkspace(places, workspaceId) : unmountAll(places.mountPoint));
      }),
    );
  };

  return {
    async probe() {
      await probeQuotaHost({ prepare, owner });
      // Once per process: leftovers only come from crashes, and a listing of every image is not free.
      swept ??= prepare().then((places) => sweepLeftovers(places, { sparePrefix: spares.prefix }));
      await swept;
      await spares.start();
    },

    async ensure(workspaceId, ensureOptions) {
      const mountPoint = await open(workspaceId, true, ensureOptions?.adopt);
      if (mountPoint === undefined) throw new Error(`Workspace ${workspaceId} was not created.`);
      return mountPoint;
    },

    existing: (workspaceId) => open(workspaceId, false),
    mountSpare: async () => mountSpare(await context.newImage(), (await prepare()).images),
    unmount: (workspaceId) => close(workspaceId, false),
    close: () => spares.stop(),
    remove: (workspaceId) => close(workspaceId, true),

    async unmountOpened() {
      const failures: string[] = [];
      // Those mounted, and those an operation is still mounting: `close` queues behind it.
      for (const workspaceId of new Set([...mountedDevices.keys(), ...operations.keys(), ...moving.keys()])) {
        await close(workspaceId, false).catch((error: unknown) => {
          failures.push(`${workspaceId}: ${error instanceof Error ? error.message : String(error)}`);
        });
      }
      return failures;
    },

    async usage(workspaceId) {
      const mountPoint = await open(workspaceId, false);
      if (mountPoint === undefined) throw new Error(`Workspace ${workspaceId} has no filesystem.`);
      const stats = await statfs(mountPoint);
      const usedBlocks = stats.blocks - stats.bfree;
      return {
        bytes: usedBlocks * stats.bsize,
        files: stats.files - stats.ffree - RESERVED_INODES,
        maxBytes: (usedBlocks + stats.bavail) * stats.bsize,
        maxFiles: stats.files - RESERVED_INODES,
      };
    },
  };
}
