import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { procStatFields } from '../src/proc-stat.js';
import type { SandboxBackend } from '../src/sandbox/backend.js';
import { createBwrapBackend } from '../src/sandbox/bwrap/bwrap-backend.js';
import { hostProcesses, isRunning } from './support/host-processes.js';
import { eventually, pollUntil } from './support/poll.js';
import { newWorkspaceId } from './support/sandbox-backend-contract.js';
import { removeWorkspacesRoot } from './support/workspace-roots.js';

/**
 * Sandboxes started ahead of need (`warmSandboxes`): a new workspace's first call runs in one
 * that was already up over an empty spare filesystem, which becomes the workspace's own. Real
 * bwrap, cgroups and loop-mounted filesystems; probes from the host for where each part went.
 */
const isRoot = process.getuid?.() === 0;
const MiB = 1024 ** 2;
const temporaryRoots: string[] = [];
const backends: SandboxBackend[] = [];

async function createBackend(workspacesDir?: string, warmSandboxes = 1) {
  let directory = workspacesDir;
  if (!directory) {
    const base = await mkdtemp(path.join(tmpdir(), 'mordn-warm-'));
    temporaryRoots.push(base);
    directory = path.join(base, 'workspaces');
  }
  const backend = createBwrapBackend({
    workspacesDir: directory,
    warmSandboxes,
    quota: { maxBytes: 16 * MiB, maxFiles: 500 },
    idleMs: 60_000,
  });
  backends.push(backend);
  await backend.probe();
  return { backend, workspacesDir: directory };
}

afterAll(async () => {
  for (const backend of backends) await backend.close?.();
  for (const root of temporaryRoots) await removeWorkspacesRoot(root);
});

const exec = (backend: SandboxBackend, workspaceId: string, command: string) =>
  backend.exec(workspaceId, { command, timeoutMs: 20_000, maxOutputBytes: 65_536 });

/** The spare filesystems mounted for waiting sandboxes: their mount points in `.images`. */
async function mountedSpares(workspacesDir: string): Promise<string[]> {
  const images = path.join(workspacesDir, '.images');
  const names = await readdir(images).catch(() => [] as string[]);
  return names.filter((name) => name.startsWith('.mounted-')).map((name) => path.join(images, name));
}

/** Whether the process is PID 1 of its PID namespace, as a sandbox's supervisor is (not a fork of it). */
async function isNamespaceInit(pid: number): Promise<boolean> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return /^NSpid:.*\s1$/m.test(status);
}

/** The host pid of the supervisor whose /workspace is the filesystem mounted at `mountPoint`. */
async function supervisorOver(mountPoint: string): Promise<number | undefined> {
  const device = (await stat(mountPoint)).dev;
  for (const pid of await hostProcesses('/opt/mordn/supervisor.py')) {
    if (!(await isNamespaceInit(pid))) continue;
    const inside = await stat(`/proc/${pid}/root/workspace`).catch(() => undefined);
    if (inside?.dev === device && inside.ino === 2) return pid;
  }
  return undefined;
}

/** A waiting sandbox: its spare's mount point and its supervisor's pid, once both are up. */
async function waitingSandbox(workspacesDir: string, not?: string): Promise<{ spare: string; supervisor: number }> {
  const found = await pollUntil(
    async () => {
      for (const spare of await mountedSpares(workspacesDir)) {
        if (spare === not) continue;
        const supervisor = await supervisorOver(spare).catch(() => undefined);
        if (supervisor !== undefined) return { spare, supervisor };
      }
      return undefined;
    },
    (value) => value !== undefined,
    // Longer than the backend's 30 s retry: a start that fails on a loaded machine is retried then.
    { timeoutMs: 45_000 },
  );
  if (!found) throw new Error(`no sandbox was started ahead of need in ${workspacesDir} within 45 s`);
  return found;
}

/** The nice value of a process, from the host. */
async function niceness(pid: number): Promise<number> {
  return Number(procStatFields(await readFile(`/proc/${pid}/stat`, 'utf8'))[16]);
}

// Each case waits for sandboxes to start in the background, which a loaded machine slows down.
describe.skipIf(!isRoot)('bwrap sandboxes started ahead of need', { timeout: 150_000 }, () => {
  it('runs a new workspace first call in a waiting sandbox, over what becomes its own filesystem', async () => {
    const { backend, workspacesDir } = await createBackend();
    const waiting = await waitingSandbox(workspacesDir);
    const spareDevice = (await stat(waiting.spare)).dev;
    // Waiting, it yields the CPU to every call being served.
    expect(await niceness(waiting.supervisor)).toBe(19);
    const workspace = newWorkspaceId();

    await backend.ensureWorkspace(workspace);
    const mountPoint = path.join(workspacesDir, workspace);
    const written = await exec(backend, workspace, 'echo kept > notes.txt; cat /proc/self/mountinfo');
    expect(written.exitCode).toBe(0);
    // Taken, it and the commands it forks run at normal priority.
    expect(await niceness(waiting.supervisor)).toBe(0);
    expect((await exec(backend, workspace, 'nice')).stdout).toBe('0\n');

    // The waiting sandbox is the workspace's: same supervisor, same filesystem, now at the
    // workspace's own mount point and image name; the spare's mount point is gone.
    expect(await supervisorOver(mountPoint)).toBe(waiting.supervisor);
    expect((await stat(mountPoint)).dev).toBe(spareDevice);
    expect(await readFile(path.join(mountPoint, 'notes.txt'), 'utf8')).toBe('kept\n');
    expect((await stat(path.join(workspacesDir, '.images', `${workspace}.ext4`))).isFile()).toBe(true);
    expect(await mountedSpares(workspacesDir)).not.toContain(waiting.spare);
    // Nothing of the host's paths (the spare's or the workspace's) shows inside.
    expect(written.stdout).toContain(' /workspace ');
    expect(written.stdout).not.toContain(path.dirname(workspacesDir));
    expect(written.stdout).not.toContain('.mounted-');
    // The quota holds on it like on any workspace's filesystem.
    const flood = await exec(
      backend,
      workspace,
      'dd if=/dev/zero of=flood bs=1M count=40; sync; cat /dev/zero > more; status=$?; sync; exit $status',
    );
    expect(flood, JSON.stringify(flood)).toMatchObject({ exitCode: 1, quotaReached: true });
    await exec(backend, workspace, 'rm -f flood more');

    // Another new workspace gets the replacement, and neither sees the other.
    const other = newWorkspaceId();
    await waitingSandbox(workspacesDir, waiting.spare);
    await backend.ensureWorkspace(other);
    const listing = await exec(backend, other, 'ls -A /workspace; echo end');
    expect(listing.stdout).toBe('end\n');

    // After a restart the workspace's image mounts again under its own name, files intact.
    await backend.close?.();
    const { backend: restarted } = await createBackend(workspacesDir, 0);
    expect((await exec(restarted, workspace, 'cat notes.txt')).stdout).toBe('kept\n');

    // Removal takes its sandbox, mount and image.
    const supervisor = await supervisorOver(mountPoint);
    expect(supervisor).toBeDefined();
    await restarted.removeWorkspace(workspace);
    expect(await eventually(async () => !(await isRunning(supervisor as number)), { timeoutMs: 10_000 })).toBe(true);
    expect(await stat(mountPoint).catch(() => undefined)).toBeUndefined();
    expect(await stat(path.join(workspacesDir, '.images', `${workspace}.ext4`)).catch(() => undefined)).toBeUndefined();
  });

  it('replaces a waiting sandbox that died, and stops every waiting one on close', async () => {
    const { backend, workspacesDir } = await createBackend();
    const first = await waitingSandbox(workspacesDir);
    process.kill(first.supervisor, 'SIGKILL');
    const second = await waitingSandbox(workspacesDir, first.spare);
    expect(second.supervisor).not.toBe(first.supervisor);
    expect(
      await eventually(async () => !(await mountedSpares(workspacesDir)).includes(first.spare), { timeoutMs: 10_000 }),
    ).toBe(true);

    // A new workspace still gets a working sandbox.
    const workspace = newWorkspaceId();
    await backend.ensureWorkspace(workspace);
    expect((await exec(backend, workspace, 'echo ok')).stdout).toBe('ok\n');

    // Close: no waiting sandbox, no mounted spare left, and the workspace's filesystem unmounted
    // (its image stays), so that nothing of a stopped service is mounted in its data directory.
    const third = await waitingSandbox(workspacesDir, second.spare);
    await backend.close?.();
    expect(await isRunning(third.supervisor)).toBe(false);
    expect(await mountedSpares(workspacesDir)).toEqual([]);
    const mounts = (await readFile('/proc/self/mounts', 'utf8')).split('\n');
    expect(mounts.filter((line) => line.includes(workspacesDir))).toEqual([]);
    expect((await stat(path.join(workspacesDir, '.images', `${workspace}.ext4`))).isFile()).toBe(true);
  });
});
