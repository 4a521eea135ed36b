import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const runFile = promisify(execFile);

/** A small ext4 filesystem in an image file, loop-mounted for one test. */
export interface LoopFilesystem {
  /** Where it is mounted (owned by root, mode 0700 at its root). */
  mountPoint: string;
  /** Unmounts it (lazily if busy) and removes the image; safe to call twice. */
  destroy(): Promise<void>;
}

/**
 * Why a loop-mounted ext4 cannot be made here, or undefined when it can: it needs root (mount),
 * `mkfs.ext4` (e2fsprogs) and a loop device.
 */
export async function loopFilesystemUnavailable(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'mounting a loop filesystem needs root';
  for (const [command, args] of [
    ['mkfs.ext4', ['-V']],
    ['losetup', ['--version']],
  ] as const) {
    const found = await runFile(command, [...args]).then(
      () => true,
      () => false,
    );
    if (!found) return `${command} is not installed (e2fsprogs / util-linux)`;
  }
  return undefined;
}

async function isMounted(mountPoint: string): Promise<boolean> {
  const mounts = await readFile('/proc/self/mounts', 'utf8');
  return mounts.split('\n').some((line) => line.split(' ')[1] === mountPoint);
}

/**
 * Makes and mounts an ext4 filesystem of `sizeBytes` with no blocks reserved for root, so that
 * "full" means full for the service (which runs as root here) as well.
 *
 * @example
 * const disk = await mountLoopFilesystem(32 * 1024 * 1024);
 * try { … } finally { await disk.destroy(); }
 */
export async function mountLoopFilesystem(sizeBytes: number): Promise<LoopFilesystem> {
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-small-disk-'));
  const image = path.join(directory, 'disk.img');
  const mountPoint = path.join(directory, 'mnt');
  const handle = await open(image, 'wx', 0o600);
  await handle.truncate(sizeBytes);
  await handle.close();
  await mkdir(mountPoint, { mode: 0o700 });
  const destroy = async () => {
    if (await isMounted(mountPoint)) {
      await runFile('umount', [mountPoint]).catch(() => runFile('umount', ['-l', mountPoint]));
    }
    await rm(directory, { recursive: true, force: true });
  };
  try {
    await runFile('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=0,lazy_journal_init=0', image]);
    await runFile('mount', ['-o', 'loop', image, mountPoint]);
  } catch (error) {
    await destroy();
    throw error;
  }
  return { mountPoint, destroy };
}

/**
 * Writes `file` until the filesystem refuses (ENOSPC), first in large then in single-block
 * writes, and flushes it: afterwards no further byte fits. Returns how many bytes it holds.
 */
export async function fillFilesystem(file: string): Promise<number> {
  const handle = await open(file, 'wx', 0o600);
  let written = 0;
  try {
    for (const chunkSize of [1024 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(chunkSize, 0x5a);
      for (;;) {
        try {
          const { bytesWritten } = await handle.write(chunk);
          written += bytesWritten;
          if (bytesWritten < chunkSize) break;
        } catch (error) {
          if (error instanceof Error && 'code' in error && error.code === 'ENOSPC') break;
          throw error;
        }
      }
    }
    await handle.sync().catch(() => undefined);
  } finally {
    await handle.close();
  }
  return written;
}
