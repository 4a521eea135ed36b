import { execFile } from 'node:child_process';
import {
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  stat,
  statfs,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuotaFilesystems, type QuotaFilesystemOptions } from '../src/sandbox/limits/quota-filesystem.js';
import { allocationBound } from '../src/sandbox/limits/quota-layout.js';
import { mountsAt, parseMountInfo } from '../src/sandbox/limits/quota-mounts.js';
import { pollUntil } from './support/poll.js';

const MIB = 1024 ** 2;
const QUOTA = 5 * MIB;
const MAX_FILES = 200;
/** Sandboxes run as this host user; the filesystems' roots belong to it. */
const NOBODY = { uid: 65534, gid: 65534 };
const isRoot = process.getuid?.() === 0;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `script` with /bin/sh as nobody in `cwd` (entered before the switch, so its 0700 parents do not matter). */
function asNobody(cwd: string, script: string): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', script], { cwd, ...NOBODY, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function run(tool: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(tool, args, { timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message} ${stderr}`)) : resolve(stdout),
    );
  });
}

/** What the host has allocated for `file` (`du`), once the filesystem inside has written everything out. */
async function allocated(file: string, mountPoint?: string): Promise<number> {
  if (mountPoint) await run('sync', ['-f', mountPoint]);
  return (await stat(file)).blocks * 512;
}

async function available(mountPoint: string): Promise<number> {
  const stats = await statfs(mountPoint);
  return stats.bavail * stats.bsize;
}

async function mountsUnder(directory: string) {
  const entries = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
  return entries.filter((entry) => entry.mountPoint === directory || entry.mountPoint.startsWith(`${directory}/`));
}

/** Every attached loop device and its backing file (other suites may hold loop devices too). */
async function attachedLoopDevices(): Promise<Array<{ device: string; backingFile: string }>> {
  const attached: Array<{ device: string; backingFile: string }> = [];
  for (const name of (await readdir('/sys/block')).filter((entry) => entry.startsWith('loop'))) {
    const backingFile = (await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(() => '')).trim();
    if (backingFile) attached.push({ device: `/dev/${name}`, backingFile });
  }
  return attached;
}

async function loopDevicesOf(image: string): Promise<string[]> {
  return (await attachedLoopDevices()).filter((entry) => entry.backingFile === image).map((entry) => entry.device);
}

async function loopDevicesUnder(directory: string): Promise<string[]> {
  const attached = await attachedLoopDevices();
  return attached.filter((entry) => entry.backingFile.startsWith(`${directory}/`)).map((entry) => entry.device);
}

async function sizesOf(directory: string, names: string[]): Promise<number> {
  let total = 0;
  for (const name of names) total += (await stat(path.join(directory, name)).catch(() => ({ size: 0 }))).size;
  return total;
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

describe.skipIf(!isRoot)('quota filesystems (loop-mounted ext4 per workspace)', () => {
  let root: string;
  const quotaFor = (overrides: Partial<QuotaFilesystemOptions> = {}) =>
    createQuotaFilesystems({
      directory: root,
      maxBytes: QUOTA,
      maxFiles: MAX_FILES,
      owner: NOBODY,
      poolSize: 0,
      ...overrides,
    });
  const imageOf = (workspaceId: string) => path.join(root, '.images', `${workspaceId}.ext4`);

  beforeAll(async () => {
    root = await realpath(await mkdtemp(path.join(tmpdir(), 'mordn-quota-')));
  });

  afterAll(async () => {
    // Whatever a failed test left: mounts first (deepest first), then loop devices, then files.
    for (const entry of (await mountsUnder(root)).reverse()) {
      await run('umount', ['-l', entry.mountPoint]).catch(() => undefined);
    }
    for (const device of await loopDevicesUnder(root)) {
      await run('losetup', ['-d', device]).catch(() => undefined);
    }
    await rm(root, { recursive: true, force: true });
  });

  it('probes successfully as root and leaves nothing behind', async () => {
    await quotaFor().probe();
    expect(await readdir(path.join(root, '.images'))).toEqual([]);
    expect(await loopDevicesUnder(root)).toEqual([]);
  });

  it('gives a new workspace a filesystem of its own, owned by the sandbox user, holding the whole quota', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_fresh');
    expect(mountPoint).toBe(path.join(root, 'ws_fresh'));
    const mounts = mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), mountPoint);
    expect(mounts).toHaveLength(1);
    expect(mounts[0]).toMatchObject({ fsType: 'ext4', root: '/', source: expect.stringMatching(/^\/dev\/loop\d+$/) });
    const top = await stat(mountPoint);
    expect({ uid: top.uid, gid: top.gid, mode: top.mode & 0o7777, inode: top.ino }).toEqual({
      ...NOBODY,
      mode: 0o700,
      inode: 2,
    });
    expect(await readdir(mountPoint)).toEqual([]);
    expect(await available(mountPoint)).toBeGreaterThanOrEqual(QUOTA);
    const image = await stat(imageOf('ws_fresh'));
    expect({ uid: image.uid, mode: image.mode & 0o777 }).toEqual({ uid: 0, mode: 0o600 });
    expect(await allocated(imageOf('ws_fresh'))).toBeLessThan(MIB);
    const usage = await quota.usage('ws_fresh');
    expect(usage).toEqual({ bytes: 4096, files: 0, maxBytes: QUOTA + 4096, maxFiles: 198 });
    // setuid binaries and device nodes made inside mean nothing on the host.
    const options = (await run('findmnt', ['-no', 'OPTIONS', mountPoint])).trim().split(',');
    expect(options).toEqual(expect.arrayContaining(['nosuid', 'nodev', 'discard']));
  });

  it('stops dd at the quota with ENOSPC, and the host allocates at most the bound', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_dd');
    const other = await quota.ensure('ws_neighbour');
    const writes = await asNobody(
      mountPoint,
      'for f in f1 f2 f3; do dd if=/dev/zero of=$f bs=1M count=8 2>&1 || echo FAILED; done',
    );
    expect(writes.stdout).toContain('No space left on device');
    expect(writes.stdout).toContain('FAILED');
    // Usable: what an unprivileged user could write before ENOSPC.
    expect(await sizesOf(mountPoint, ['f1', 'f2', 'f3'])).toBeGreaterThanOrEqual(QUOTA * 0.99);
    expect(await allocated(imageOf('ws_dd'), mountPoint)).toBeLessThanOrEqual(allocationBound(QUOTA));
    // The neighbour is untouched: all of its quota is still free and writable.
    expect(await available(other)).toBeGreaterThanOrEqual(QUOTA);
    expect((await asNobody(other, 'dd if=/dev/zero of=f bs=1M count=4 2>&1')).code).toBe(0);
  });

  it('refuses fallocate beyond the quota; what it does reserve costs the host nothing yet', async () => {
    const mountPoint = await quotaFor().ensure('ws_fallocate');
    const tooBig = await asNobody(mountPoint, 'fallocate -l 20M big');
    expect(tooBig.code).not.toBe(0);
    expect(tooBig.stderr).toContain('No space left on device');
    // A failed fallocate keeps what it had reserved by then, as ext4 does.
    expect((await asNobody(mountPoint, 'rm big && fallocate -l 4M fits')).code).toBe(0);
    expect(await allocated(imageOf('ws_fallocate'), mountPoint)).toBeLessThan(MIB);
    const filled = await asNobody(
      mountPoint,
      'dd if=/dev/zero of=fits bs=1M count=4 conv=notrunc 2>&1; dd if=/dev/zero of=more bs=1M count=8 2>&1',
    );
    expect(filled.stdout).toContain('No space left on device');
    expect(await allocated(imageOf('ws_fallocate'), mountPoint)).toBeLessThanOrEqual(allocationBound(QUOTA));
  });

  it('lets a sparse file have any size while only its written blocks count', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_sparse');
    const script = [
      'truncate -s 10G sparse || exit 9',
      'for k in 0 1 2 3 4 5 6 7 8 9; do dd if=/dev/zero of=sparse bs=1M count=1 seek=$((k * 1000)) conv=notrunc 2>&1 || break; done',
    ].join('; ');
    const outcome = await asNobody(mountPoint, script);
    expect(outcome.code).not.toBe(9);
    expect(outcome.stdout).toContain('No space left on device');
    expect((await stat(path.join(mountPoint, 'sparse'))).size).toBeGreaterThanOrEqual(10 * 1024 * MIB);
    expect(await allocated(imageOf('ws_sparse'), mountPoint)).toBeLessThanOrEqual(allocationBound(QUOTA));
    const usage = await quota.usage('ws_sparse');
    expect(usage.bytes).toBeLessThanOrEqual(usage.maxBytes);
  });

  it('bounds the number of files by maxFiles', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_files');
    const outcome = await asNobody(
      mountPoint,
      'i=0; while printf "" 2>/dev/null > "f$i"; do i=$((i + 1)); done; echo $i; printf "" > one-more',
    );
    const count = Number(outcome.stdout.trim());
    expect(count).toBeLessThanOrEqual(MAX_FILES);
    // Inode tables come in blocks of 16 inodes, so up to 15 below (see planQuotaLayout).
    expect(count).toBeGreaterThan(MAX_FILES - 16);
    expect(outcome.stderr).toContain('No space left on device');
    expect((await asNobody(mountPoint, 'mkdir more')).stderr).toContain('No space left on device');
    expect(await quota.usage('ws_files')).toMatchObject({ files: count, maxFiles: count });
  });

  it('counts the blocks of a hard-linked file once', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_links');
    const outcome = await asNobody(
      mountPoint,
      'dd if=/dev/zero of=big bs=1M count=3 2>/dev/null && for i in $(seq 1 50); do ln big link$i || exit 1; done',
    );
    expect(outcome.code).toBe(0);
    const usage = await quota.usage('ws_links');
    expect(usage.bytes).toBeLessThan(4 * MIB);
    expect(usage.files).toBe(1);
    expect(await allocated(imageOf('ws_links'), mountPoint)).toBeLessThan(4 * MIB);
  });

  it('keeps the files of an unmounted workspace and mounts it again, also from a new process', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_keep');
    expect((await asNobody(mountPoint, 'echo kept > marker')).code).toBe(0);
    await quota.unmount('ws_keep');
    expect(mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), mountPoint)).toEqual([]);
    expect(await readdir(mountPoint)).toEqual([]);
    // Freed when unmount returns, not some time later.
    expect(await loopDevicesOf(imageOf('ws_keep'))).toEqual([]);
    expect(await quota.ensure('ws_keep')).toBe(mountPoint);
    expect(await readFile(path.join(mountPoint, 'marker'), 'utf8')).toBe('kept\n');
    // A restarted service finds the mount that outlived it and adds none.
    expect(await quotaFor().ensure('ws_keep')).toBe(mountPoint);
    expect(mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), mountPoint)).toHaveLength(1);
    expect(await quotaFor().existing('ws_never')).toBeUndefined();
  });

  it('migrates a plain workspace directory of the old layout without following its symlinks', async () => {
    const old = path.join(root, 'ws_old');
    await mkdir(path.join(old, 'nested', 'deeper'), { recursive: true });
    await writeFile(path.join(old, 'notes.txt'), 'hello');
    await writeFile(path.join(old, 'nested', 'deeper', 'data.bin'), Buffer.alloc(100_000, 7));
    await symlink('/etc/passwd', path.join(old, 'passwd'));
    for (const entry of [
      old,
      path.join(old, 'nested'),
      path.join(old, 'nested', 'deeper'),
      path.join(old, 'notes.txt'),
    ]) {
      await chown(entry, NOBODY.uid, NOBODY.gid);
    }
    const mountPoint = await quotaFor().ensure('ws_old');
    expect(mountPoint).toBe(old);
    expect(mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), old)).toHaveLength(1);
    expect((await readdir(old)).sort()).toEqual(['nested', 'notes.txt', 'passwd']);
    expect(await readFile(path.join(old, 'notes.txt'), 'utf8')).toBe('hello');
    expect(await readFile(path.join(old, 'nested', 'deeper', 'data.bin'))).toEqual(Buffer.alloc(100_000, 7));
    expect((await lstat(path.join(old, 'passwd'))).isSymbolicLink()).toBe(true);
    expect(await readlink(path.join(old, 'passwd'))).toBe('/etc/passwd');
    expect((await stat(path.join(old, 'notes.txt'))).uid).toBe(NOBODY.uid);
    expect((await stat(old)).uid).toBe(NOBODY.uid);
    expect((await readdir(root)).filter((name) => name.startsWith('.discarded-'))).toEqual([]);
  });

  it('leaves an old directory that does not fit as it was, and says so', async () => {
    const old = path.join(root, 'ws_too_big');
    await mkdir(old);
    await writeFile(path.join(old, 'large.bin'), Buffer.alloc(8 * MIB, 1));
    await expect(quotaFor().ensure('ws_too_big')).rejects.toThrow(
      /its files do not fit in 5242880 bytes and 198 files; the directory stays as it was/,
    );
    expect(await readdir(old)).toEqual(['large.bin']);
    expect((await stat(path.join(old, 'large.bin'))).size).toBe(8 * MIB);
    await expect(lstat(imageOf('ws_too_big'))).rejects.toThrow('ENOENT');
    expect(mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), old)).toEqual([]);
  });

  it('is not tripped by what a crash left: a half-made temporary image, an empty mount point, files under an image', async () => {
    const stray = path.join(root, '.images', '.tmp-crashed.ext4');
    await writeFile(stray, Buffer.alloc(MIB));
    await mkdir(path.join(root, 'ws_orphan'));
    const quota = quotaFor();
    expect(await quota.ensure('ws_orphan')).toBe(path.join(root, 'ws_orphan'));
    // A migration that stopped after placing its image: the image has the files, the directory is a leftover.
    const mountPoint = await quota.ensure('ws_interrupted');
    await asNobody(mountPoint, 'echo from-image > marker');
    await quota.unmount('ws_interrupted');
    await writeFile(path.join(mountPoint, 'leftover'), 'old');
    expect(await quota.ensure('ws_interrupted')).toBe(mountPoint);
    expect(await readdir(mountPoint)).toEqual(['marker']);
    // Old enough to be nobody's, the stray goes at the next probe.
    await utimes(stray, new Date(0), new Date(0));
    await quota.probe();
    await expect(lstat(stray)).rejects.toThrow('ENOENT');
  });

  it('removes a workspace completely: no image, no mount, no loop device, no lock file', async () => {
    const quota = quotaFor();
    const mountPoint = await quota.ensure('ws_gone');
    await asNobody(mountPoint, 'dd if=/dev/zero of=f bs=1M count=1 2>/dev/null');
    expect(await loopDevicesOf(imageOf('ws_gone'))).toHaveLength(1);
    await quota.remove('ws_gone');
    await expect(lstat(imageOf('ws_gone'))).rejects.toThrow('ENOENT');
    await expect(lstat(mountPoint)).rejects.toThrow('ENOENT');
    await expect(lstat(path.join(root, '.images', 'ws_gone.lock'))).rejects.toThrow('ENOENT');
    // Freed when remove returns: nothing is attached to the image, deleted or not.
    expect(await loopDevicesOf(imageOf('ws_gone'))).toEqual([]);
    expect(await loopDevicesOf(`${imageOf('ws_gone')} (deleted)`)).toEqual([]);
    await quota.remove('ws_gone');
    // An old-layout directory goes too.
    await mkdir(path.join(root, 'ws_plain'));
    await writeFile(path.join(root, 'ws_plain', 'file'), 'x');
    await quota.remove('ws_plain');
    await expect(lstat(path.join(root, 'ws_plain'))).rejects.toThrow('ENOENT');
  });

  it('shares one operation between concurrent ensures, and makes many workspaces at once', async () => {
    const quota = quotaFor();
    const same = await Promise.all(Array.from({ length: 8 }, () => quota.ensure('ws_same')));
    expect(new Set(same)).toEqual(new Set([path.join(root, 'ws_same')]));
    expect(mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), path.join(root, 'ws_same'))).toHaveLength(1);
    // Two processes at once: a second instance stands in for a second service replica.
    const replicas = await Promise.all([quotaFor().ensure('ws_raced'), quotaFor().ensure('ws_raced')]);
    expect(replicas[0]).toBe(replicas[1]);
    expect(mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), path.join(root, 'ws_raced'))).toHaveLength(1);
    const many = await Promise.all(Array.from({ length: 8 }, (_, index) => quota.ensure(`ws_many${index}`)));
    const table = await readFile('/proc/self/mountinfo', 'utf8');
    expect(new Set(many.map((mountPoint) => mountsAt(table, mountPoint)[0]?.source)).size).toBe(8);
  });

  it('grows a filesystem for a larger quota, keeping its files, and never shrinks it', async () => {
    const mountPoint = await quotaFor().ensure('ws_grow');
    await asNobody(mountPoint, 'echo before > marker');
    await quotaFor().unmount('ws_grow');
    await quotaFor({ maxBytes: 64 * MIB, maxFiles: 4096 }).ensure('ws_grow');
    expect(await available(mountPoint)).toBeGreaterThanOrEqual(64 * MIB - 4096);
    expect(await readFile(path.join(mountPoint, 'marker'), 'utf8')).toBe('before\n');
    expect((await stat(imageOf('ws_grow'))).size).toBeLessThanOrEqual(allocationBound(64 * MIB));
    // Mounted, it grows online where the kernel lets this process (CAP_SYS_RESOURCE), else at its next mount.
    const warnings: string[] = [];
    const larger = quotaFor({ maxBytes: 128 * MIB, maxFiles: 8192, onWarning: (message) => warnings.push(message) });
    await larger.ensure('ws_grow');
    if ((await available(mountPoint)) < 128 * MIB - 4096) {
      expect(warnings.join('\n')).toContain('it grows when next mounted');
      await larger.unmount('ws_grow');
      await larger.ensure('ws_grow');
    }
    expect(await available(mountPoint)).toBeGreaterThanOrEqual(128 * MIB - 4096);
    await quotaFor().ensure('ws_grow');
    expect(await available(mountPoint)).toBeGreaterThanOrEqual(128 * MIB - 4096);
  });

  it.each([
    { label: '64 MiB', maxBytes: 64 * MIB, maxFiles: 4096, fill: true },
    { label: '1 GiB', maxBytes: 1024 * MIB, maxFiles: 65_536, fill: false },
  ])('sizes a $label workspace within both bounds', async ({ label, maxBytes, maxFiles, fill }) => {
    const workspaceId = `ws_size${maxBytes}`;
    const quota = quotaFor({ maxBytes, maxFiles });
    const mountPoint = await quota.ensure(workspaceId);
    const image = imageOf(workspaceId);
    const fresh = {
      usable: await available(mountPoint),
      image: (await stat(image)).size,
      allocated: await allocated(image, mountPoint),
    };
    const stats = await statfs(mountPoint);
    expect(fresh.usable).toBeGreaterThanOrEqual(maxBytes * 0.99);
    expect(fresh.image).toBeLessThanOrEqual(allocationBound(maxBytes));
    expect(fresh.allocated).toBeLessThan(MIB);
    expect(stats.files - 10).toBeLessThanOrEqual(maxFiles);
    let full: number | undefined;
    if (fill) {
      // Filled twice: delayed allocation can refuse early while much is unwritten; after a sync
      // the rest of the quota takes data too.
      const outcome = await asNobody(
        mountPoint,
        'dd if=/dev/zero of=fill bs=1M 2>&1; sync; cat /dev/zero >> fill 2>/dev/null; sync',
      );
      expect(outcome.stdout).toContain('No space left on device');
      expect((await stat(path.join(mountPoint, 'fill'))).size).toBeGreaterThanOrEqual(maxBytes * 0.99);
      full = await allocated(image, mountPoint);
      expect(full).toBeLessThanOrEqual(allocationBound(maxBytes));
      // Deleted blocks are discarded: the host gets them back.
      await asNobody(mountPoint, 'rm fill');
      const after = await pollUntil(
        () => allocated(image, mountPoint),
        (bytes) => bytes < 8 * MIB,
        { timeoutMs: 15_000, intervalMs: 500 },
      );
      expect(after).toBeLessThan(8 * MIB);
    }
    console.log(
      `${label}: image ${fresh.image} B, usable ${fresh.usable} B, host allocation fresh ${fresh.allocated} B, full ${full ?? '-'} B, files ${stats.files - 10}`,
    );
  });

  it('makes a new workspace fast, and answers at once for a mounted one', async () => {
    const timings = { cold: [] as number[], pooled: [] as number[], warm: [] as number[] };
    const quota = quotaFor();
    for (let index = 0; index < 20; index += 1) {
      const started = performance.now();
      await quota.ensure(`ws_cold${index}`);
      timings.cold.push(performance.now() - started);
    }
    for (let index = 0; index < 20; index += 1) {
      const started = performance.now();
      await quota.ensure(`ws_cold${index}`);
      timings.warm.push(performance.now() - started);
    }
    const pooled = quotaFor({ poolSize: 2 });
    await pooled.probe();
    const spares = async () =>
      (await readdir(path.join(root, '.images'))).filter((name) => name.startsWith('.spare-')).length;
    for (let index = 0; index < 20; index += 1) {
      // As requests arrive, not all at once: the pool refills in between.
      await pollUntil(spares, (count) => count >= 2, { timeoutMs: 5000, intervalMs: 20 });
      const started = performance.now();
      await pooled.ensure(`ws_pooled${index}`);
      timings.pooled.push(performance.now() - started);
    }
    const [cold, pooledMedian, warm] = [median(timings.cold), median(timings.pooled), median(timings.warm)];
    console.log(
      `ensure p50: new ${cold.toFixed(1)} ms (mkfs), new ${pooledMedian.toFixed(1)} ms (spare), mounted ${warm.toFixed(3)} ms`,
    );
    // Generous ceilings: this checks the shape (milliseconds, not seconds), not the machine.
    expect(cold).toBeLessThan(500);
    expect(pooledMedian).toBeLessThan(500);
    expect(warm).toBeLessThan(5);
    expect(await pollUntil(spares, (count) => count === 2, { timeoutMs: 5000 })).toBe(2);
  });
});
