import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ensureDirectory, PROBE_PREFIX } from './quota-housekeeping.js';
import { makeImage } from './quota-images.js';
import { planQuotaLayout } from './quota-layout.js';
import { holdLock } from './quota-lock.js';
import { mountImage, setReservedClusters, unmountAll } from './quota-mounting.js';
import { QuotaUnavailableError } from './quota-unavailable-error.js';

/** The scratch filesystem: small, but with a journal like every real one. */
const SCRATCH_BYTES = 4 * 1024 * 1024;
const SCRATCH_FILES = 64;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Proves that this host can give workspaces their own filesystems, by doing it once: a scratch
 * image made, locked, mounted, tuned and unmounted the way `ensure` does, beside the workspaces.
 * Throws a `QuotaUnavailableError` saying what is missing; leaves nothing behind either way.
 *
 * @example
 * await probeQuotaHost({ prepare, owner: { uid: 65534, gid: 65534 } });
 */
export async function probeQuotaHost(context: {
  prepare: () => Promise<{ root: string; images: string }>;
  owner: { uid: number; gid: number };
}): Promise<void> {
  const uid = process.getuid?.();
  if (uid !== 0) {
    throw new QuotaUnavailableError(
      `per-workspace filesystems need root (loop devices, mount); the service runs as uid ${uid ?? 'unknown'}`,
    );
  }
  if (!existsSync('/dev/loop-control')) {
    throw new QuotaUnavailableError(
      'this host has no loop devices (/dev/loop-control is missing): load the loop module, or give the container /dev/loop-control and /dev/loop*',
    );
  }
  const places = await context.prepare().catch((error: unknown) => {
    throw new QuotaUnavailableError(`the workspaces directory cannot be prepared: ${messageOf(error)}`, {
      cause: error,
    });
  });
  const scratch = path.join(places.images, `${PROBE_PREFIX}${randomUUID()}`);
  let image: string | undefined;
  try {
    const release = await holdLock(`${scratch}.lock`);
    try {
      image = await makeImage(places.images, planQuotaLayout(SCRATCH_BYTES, SCRATCH_FILES), context.owner);
      await ensureDirectory(scratch, 0o700);
      const mounted = await mountImage(image, scratch);
      try {
        await setReservedClusters(mounted);
      } finally {
        await unmountAll(scratch);
      }
    } finally {
      await release();
    }
  } catch (error) {
    throw new QuotaUnavailableError(
      `a scratch workspace filesystem could not be made and mounted: ${messageOf(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    await rmdir(scratch).catch(() => undefined);
    if (image) await unlink(image).catch(() => undefined);
    await unlink(`${scratch}.lock`).catch(() => undefined);
  }
}
