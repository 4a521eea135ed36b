import { execFile } from 'node:child_process';
import { mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';
import type { SandboxBackend, WorkspaceFileError } from '../src/sandbox/backend.js';
import { detectHostLayout, sandboxArguments } from '../src/sandbox/bwrap/bwrap-arguments.js';
import { type BwrapBackendOptions, createBwrapBackend } from '../src/sandbox/bwrap/bwrap-backend.js';
import {
  describeSandboxBackendContract,
  newWorkspaceId,
  SANDBOX_CONTRACT_LIMITS,
} from './support/sandbox-backend-contract.js';
import { removeWorkspacesRoot } from './support/workspace-roots.js';

const runFile = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const temporaryRoots: string[] = [];

/** A workspaces directory below a private (0700) parent, like the service's data directory. */
async function temporaryWorkspacesDir(): Promise<string> {
  const base = await mkdtemp(path.join(tmpdir(), 'mordn-bwrap-'));
  temporaryRoots.push(base);
  return path.join(base, 'workspaces');
}

const backends: SandboxBackend[] = [];

async function createBackend(options: Partial<BwrapBackendOptions> = {}) {
  const workspacesDir = await temporaryWorkspacesDir();
  // Without root no cgroups or quota filesystems: the contract then runs on weak limits.
  const backend = createBwrapBackend({
    workspacesDir,
    limits: SANDBOX_CONTRACT_LIMITS,
    weakLimits: !isRoot,
    ...options,
  });
  backends.push(backend);
  return { backend, workspacesDir };
}

afterAll(async () => {
  for (const backend of backends) await backend.close?.();
  for (const root of temporaryRoots) await removeWorkspacesRoot(root);
});

describeSandboxBackendContract('bwrap', async () => {
  const { backend, workspacesDir } = await createBackend();
  return { backend, workspacesDir, cleanup: async () => undefined };
});

describe('bwrap backend', () => {
  let backend: Awaited<ReturnType<typeof createBackend>>['backend'];
  let workspacesDir: string;
  const workspace = newWorkspaceId();
  const run = (command: string, timeoutMs = 10_000) =>
    backend.exec(workspace, { command, timeoutMs, maxOutputBytes: 65_536 });

  beforeAll(async () => {
    ({ backend, workspacesDir } = await createBackend());
    await backend.ensureWorkspace(workspace);
  });

  it('probes successfully', async () => {
    await expect(backend.probe()).resolves.toBeUndefined();
    // The probe leaves nothing behind but the (empty) store of workspace images.
    expect((await readdir(workspacesDir)).filter((name) => name.startsWith('.') && name !== '.images')).toEqual([]);
  });

  it('fails the probe with a clear message when bwrap is missing', async () => {
    const { backend: broken } = await createBackend({ bwrapPath: '/nonexistent/bwrap' });
    await expect(broken.probe()).rejects.toThrow(/bubblewrap is not installed/);
  });

  it('fails the probe with a clear message when user namespaces are disabled', async () => {
    const fakeBwrap = path.join(await mkdtemp(path.join(tmpdir(), 'mordn-fake-bwrap-')), 'bwrap');
    temporaryRoots.push(path.dirname(fakeBwrap));
    // What bwrap itself prints when the kernel refuses an unprivileged user namespace.
    await writeFile(
      fakeBwrap,
      "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n",
      { mode: 0o755 },
    );
    const { backend: refused } = await createBackend({ bwrapPath: fakeBwrap });
    await expect(refused.probe()).rejects.toThrow(/user namespaces are disabled/);
  });

  it.each(['', 'WS_UPPER', '../escape', 'a/b', '.probe', 'x'.repeat(65), 'ws one', 'ws\0'])(
    'refuses the workspace id %j',
    async (workspaceId) => {
      await expect(backend.ensureWorkspace(workspaceId)).rejects.toThrow(/workspace id/);
      await expect(backend.removeWorkspace(workspaceId)).rejects.toThrow(/workspace id/);
      await expect(backend.exec(workspaceId, { command: 'true', timeoutMs: 1000, maxOutputBytes: 10 })).rejects.toThrow(
        /workspace id/,
      );
      await expect(backend.listFiles(workspaceId, '.', { maxEntries: 1 })).rejects.toThrow(/workspace id/);
      await expect(backend.usage(workspaceId)).rejects.toThrow(/workspace id/);
    },
  );

  it('refuses invalid paths before starting any sandbox', async () => {
    // With no bwrap at all, only a check that runs before spawning can answer INVALID_PATH.
    const { backend: unlaunchable } = await createBackend({ bwrapPath: '/nonexistent/bwrap' });
    await unlaunchable.ensureWorkspace(workspace);
    for (const filePath of ['../x', '/etc/passwd', 'a/../../b', 'a/./b', 'a\0b', '', 'a\u0085b']) {
      const codes = await Promise.all([
        unlaunchable.openFile(workspace, filePath, { maxBytes: 1 }).catch((error: WorkspaceFileError) => error.code),
        unlaunchable
          .writeFile(workspace, filePath, Readable.from([]), { maxBytes: 1 })
          .catch((error: WorkspaceFileError) => error.code),
      ]);
      expect(codes, filePath).toEqual(['INVALID_PATH', 'INVALID_PATH']);
    }
  });

  it('checks paths again inside the helper', async () => {
    const helper = path.join(packageRoot(), 'src/sandbox/runtime/fileops.py');
    for (const [operation, filePath] of [
      ['read', '../x'],
      ['read', '/etc/passwd'],
      ['write', 'a/../b'],
      ['list', 'a//b'],
      ['read', 'a\u0001b'],
    ] as const) {
      const extra = operation === 'write' ? ['10', '0'] : ['10'];
      // Validation happens before the helper touches any file, so this is safe outside a sandbox.
      const { stdout } = await runFile('/usr/bin/python3', ['-I', '-S', helper, operation, filePath, ...extra]);
      expect(JSON.parse(stdout), `${operation} ${filePath}`).toMatchObject({ ok: false, code: 'INVALID_PATH' });
    }
  });

  it('binds nothing from the host beyond /usr, a few /etc entries and the workspace', async () => {
    const shape = {
      layout: await detectHostLayout(),
      workspaceDirectory: '/srv/ws',
      tmpBytes: 1,
      helper: Buffer.from(''),
    };
    const { arguments: bwrapArguments, dataFiles } = sandboxArguments(shape, 3);
    const sources: string[] = [];
    bwrapArguments.forEach((argument, index) => {
      if (['--bind', '--ro-bind', '--dev-bind', '--bind-try', '--ro-bind-try'].includes(argument)) {
        sources.push(bwrapArguments[index + 1] as string);
      }
    });
    for (const source of sources)
      expect(source, source).toMatch(/^(\/usr|\/etc\/[\w./-]+|\/srv\/ws|\/(s?bin|lib(64)?))$/);
    expect(sources).toContain('/srv/ws');
    expect(bwrapArguments).toEqual(
      expect.arrayContaining(['--unshare-net', '--unshare-pid', '--new-session', '--die-with-parent', '--clearenv']),
    );
    expect(dataFiles).toHaveLength(4);
  });

  it('kills background children as soon as the command itself exits', async () => {
    const result = await run(
      "setsid sh -c 'while :; do echo x >> orphan; sleep 0.1; done' >/dev/null 2>&1 & sleep 0.5",
    );
    expect(result.exitCode).toBe(0);
    const size = async () => (await run('stat -c %s orphan')).stdout;
    const first = await size();
    await delay(500);
    expect(await size()).toBe(first);
  });

  it('keeps sandboxed code away from global sysctls', async () => {
    const result = await run(
      `python3 -c "
for name in ('kernel/core_pattern', 'vm/drop_caches', 'fs/file-max'):
    try:
        open('/proc/sys/' + name, 'a').close()
        print('writable', name)
    except OSError:
        pass
"`,
    );
    expect(result.stdout).toBe('');
  });

  it.runIf(isRoot)('runs sandboxes as the unprivileged host user when the service is root', async () => {
    await run('echo x > owned');
    const info = await stat(path.join(workspacesDir, workspace));
    expect(info.uid).toBe(65534);
    expect(info.mode & 0o777).toBe(0o700);
  });

  it('contains a fork bomb with RLIMIT_NPROC alone under weak limits (no cgroups)', async () => {
    const { backend: weak } = await createBackend({ cgroupRoot: '/nonexistent', weakLimits: true });
    const bombed = newWorkspaceId();
    const other = newWorkspaceId();
    await weak.ensureWorkspace(bombed);
    await weak.ensureWorkspace(other);
    const started = Date.now();
    const bomb = await weak.exec(bombed, {
      command: 'bomb() { bomb | bomb & }; bomb; exec sleep 60',
      timeoutMs: 1500,
      maxOutputBytes: 1024,
    });
    expect(bomb.timedOut).toBe(true);
    expect(Date.now() - started).toBeLessThan(1500 + 5000);
    const after = await weak.exec(other, { command: 'echo alive', timeoutMs: 5000, maxOutputBytes: 100 });
    expect(after.stdout).toBe('alive\n');
    await weak.close?.();
  });

  it('caps the processes of the workspace at the limit', async () => {
    const { processes } = SANDBOX_CONTRACT_LIMITS;
    const result = await run(`python3 -c "
import subprocess
started = 0
try:
    for _ in range(${processes + 40}):
        subprocess.Popen(['sleep', '5'])
        started += 1
except OSError:
    pass
print(started)
"`);
    const started = Number(result.stdout.trim().split('\n').at(-1));
    // The ceiling counts the workspace's processes together (the supervisor and reapers beside them).
    expect(started).toBeLessThan(processes + 40);
    expect(started).toBeGreaterThan(processes - 10);
  });
});
