import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ExecResult, SandboxBackend } from '../src/sandbox/backend.js';
import { type BwrapBackendOptions, createBwrapBackend } from '../src/sandbox/bwrap/bwrap-backend.js';
import { hostProcesses } from './support/host-processes.js';
import { eventually, pollUntil } from './support/poll.js';
import { newWorkspaceId } from './support/sandbox-backend-contract.js';
import { removeWorkspacesRoot } from './support/workspace-roots.js';

/**
 * Containment of one workspace's sandbox as a whole, attacked the way a hostile user would, with
 * a probe from the host for every limit: bytes on the host disk, resident memory of the
 * workspace's processes, CPU throttling and another user's latency, the syscalls seccomp denies,
 * processes left behind, and the supervisor itself. Real bwrap, real cgroups (v1 on CI), real
 * loop-mounted quota filesystems; the service runs as root there.
 */
const runFile = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const MiB = 1024 ** 2;
const temporaryRoots: string[] = [];
const backends: SandboxBackend[] = [];

async function createBackend(options: Partial<BwrapBackendOptions> = {}) {
  const base = await mkdtemp(path.join(tmpdir(), 'mordn-contain-'));
  temporaryRoots.push(base);
  const workspacesDir = path.join(base, 'workspaces');
  const backend = createBwrapBackend({ workspacesDir, idleMs: 60_000, ...options });
  backends.push(backend);
  return { backend, workspacesDir };
}

afterAll(async () => {
  for (const backend of backends) await backend.close?.();
  for (const root of temporaryRoots) await removeWorkspacesRoot(root);
});

const exec = (backend: SandboxBackend, workspaceId: string, command: string, timeoutMs = 20_000) =>
  backend.exec(workspaceId, { command, timeoutMs, maxOutputBytes: 65_536 });

/** The host pid of the supervisor whose /workspace holds `marker` (one supervisor per workspace). */
async function supervisorOf(marker: string): Promise<number | undefined> {
  for (const pid of await hostProcesses('/opt/mordn/supervisor.py')) {
    if (await stat(`/proc/${pid}/root/workspace/${marker}`).catch(() => undefined)) return pid;
  }
  return undefined;
}

/** The v1/v2 cgroup directory of `pid` for `controller` (v2: the one directory). */
async function cgroupDirectory(pid: number, controller: string): Promise<string> {
  const lines = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).trim().split('\n');
  const legacy = lines.find((line) => line.split(':')[1]?.split(',').includes(controller));
  if (legacy) return path.join('/sys/fs/cgroup', controller, legacy.split(':').slice(2).join(':'));
  return path.join('/sys/fs/cgroup', (lines.find((line) => line.startsWith('0::')) ?? '0::/').slice(3));
}

/**
 * Summed resident memory of every process in `pid`'s memory cgroup, each counted by its
 * proportional share (Pss): plain RSS counts the pages of python's shared libraries once per
 * process, so six interpreters starting at once would add up past what the cgroup holds.
 */
async function residentBytes(pid: number): Promise<number> {
  const directory = await cgroupDirectory(pid, 'memory');
  const members = (await readFile(path.join(directory, 'cgroup.procs'), 'utf8')).split('\n').filter(Boolean);
  let total = 0;
  for (const member of members) {
    const rollup = await readFile(`/proc/${member}/smaps_rollup`, 'utf8').catch(() => '');
    total += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
  }
  return total;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

describe.skipIf(!isRoot)('bwrap sandbox containment (root: cgroups and quota filesystems)', () => {
  describe('disk quota that exec cannot bypass', () => {
    const quota = { maxBytes: 5 * MiB, maxFiles: 200 };
    let backend: SandboxBackend;
    let workspacesDir: string;
    let workspace = '';
    const imageBytes = async () => {
      // Whatever holds the workspace on the host: its image file(s) and mount point.
      const { stdout } = await runFile('du', ['-s', '--block-size=1', '-x', workspacesDir]);
      return Number(stdout.split('\t')[0]);
    };

    beforeAll(async () => {
      ({ backend, workspacesDir } = await createBackend({ quota }));
    });

    // Every attack on a fresh workspace of its own; the host figure is the whole workspaces directory.
    beforeEach(async () => {
      if (workspace) await backend.removeWorkspace(workspace);
      workspace = newWorkspaceId();
      await backend.ensureWorkspace(workspace);
    });

    it('stops three 8 MiB dd runs at the quota, inside and on the host disk', async () => {
      const results: ExecResult[] = [];
      for (const name of ['a', 'b', 'c'])
        results.push(await exec(backend, workspace, `dd if=/dev/zero of=${name} bs=1M count=8`));
      expect(results.map((result) => result.exitCode)).toEqual([1, 1, 1]);
      expect(results[0]?.stderr).toContain('No space left on device');
      expect(results.at(-1)).toMatchObject({ quotaReached: true });
      expect(results.at(-1)?.message).toMatch(/^WORKSPACE_QUOTA_REACHED: .*5 MiB.*200 files/);
      expect(await imageBytes()).toBeLessThanOrEqual(quota.maxBytes + 8 * MiB);
      // Usable: at least the quota less 1 %, once the attack's files are gone.
      const usable = await exec(
        backend,
        workspace,
        'rm -f a b c; sync; dd if=/dev/zero of=fill bs=64k 2>/dev/null; sync; cat /dev/zero >> fill 2>/dev/null; stat -c %s fill; rm fill',
      );
      expect(Number(usable.stdout.trim())).toBeGreaterThanOrEqual(quota.maxBytes * 0.99);
    });

    it('holds against fallocate, sparse files, hard links and /tmp', async () => {
      const result = await exec(
        backend,
        workspace,
        [
          'fallocate -l 20M big 2>&1; echo "fallocate $?"',
          'truncate -s 10G sparse; for offset in 1 2 3 4 5 6 7 8 9; do dd if=/dev/zero of=sparse bs=1M count=1 seek=$((offset * 1000)) conv=notrunc 2>/dev/null; done; echo "sparse $(du -k sparse | cut -f1)"',
          'rm -f big sparse; dd if=/dev/zero of=one bs=1M count=3 2>/dev/null; for n in 1 2 3 4 5 6 7 8; do ln one link$n; done; echo "links $(du -sk . | cut -f1)"',
          'dd if=/dev/zero of=/tmp/t bs=1M count=100 2>&1 | tail -n1; rm -f /tmp/t',
        ].join('\n'),
      );
      const lines = result.stdout.split('\n');
      expect(lines.find((line) => line.startsWith('fallocate'))).not.toBe('fallocate 0');
      expect(Number(lines.find((line) => line.startsWith('sparse'))?.split(' ')[1])).toBeLessThanOrEqual(6 * 1024);
      expect(Number(lines.find((line) => line.startsWith('links'))?.split(' ')[1])).toBeLessThan(4 * 1024);
      expect(await imageBytes()).toBeLessThanOrEqual(quota.maxBytes + 8 * MiB);
      await exec(backend, workspace, 'rm -f one link*');
    });

    it('bounds the number of files', async () => {
      const result = await exec(
        backend,
        workspace,
        'n=0; while [ $n -lt 1000 ] && touch f$n 2>/dev/null; do n=$((n+1)); done; echo $n; rm -f f*',
      );
      const created = Number(result.stdout.trim());
      expect(created).toBeLessThanOrEqual(quota.maxFiles);
      expect(created).toBeGreaterThan(quota.maxFiles * 0.9);
    });

    it('shows no host path inside: mountinfo, mounts and error messages', async () => {
      const result = await exec(
        backend,
        workspace,
        'cat /proc/self/mountinfo /proc/mounts; ls /nonexistent-dir 2>&1; df /workspace',
      );
      expect(result.stdout).toContain('/workspace');
      for (const hostDetail of [workspacesDir, path.dirname(workspacesDir), workspace, '.images']) {
        expect(result.stdout, hostDetail).not.toContain(hostDetail);
      }
    });
  });

  describe('memory, processes and CPU of the workspace as a whole', () => {
    let backend: SandboxBackend;
    const workspace = newWorkspaceId();
    const other = newWorkspaceId();

    beforeAll(async () => {
      ({ backend } = await createBackend({ limits: { memoryBytes: 256 * MiB, cpus: 0.5, processes: 64 } }));
      await backend.ensureWorkspace(workspace);
      await backend.ensureWorkspace(other);
      await exec(backend, workspace, `echo > marker-${workspace}`);
      await exec(backend, other, `echo > marker-${other}`);
    });

    it('holds six memory-hungry processes to the workspace total; OOM kills inside only, the supervisor survives', async () => {
      const supervisor = await supervisorOf(`marker-${workspace}`);
      expect(supervisor).toBeDefined();
      // Six processes of 100 MiB each (2.3 × the limit), each touching every page it holds.
      const hungry = exec(
        backend,
        workspace,
        `for n in 1 2 3 4 5 6; do python3 -c "import time; b = b'x' * (100 * 1024 * 1024); time.sleep(4)" & done; wait; python3 -c "b = b'x' * (400 * 1024 * 1024)"`,
        // At the limit the processes reclaim each other's pages on half a CPU: 10 s alone, twice that beside other suites.
        45_000,
      );
      const neighbour = exec(backend, workspace, 'sleep 2; echo neighbour done');
      const peak = await pollUntil(
        () => residentBytes(supervisor as number),
        () => false,
        { timeoutMs: 3000, intervalMs: 100 },
      );
      const [result, concurrent] = await Promise.all([hungry, neighbour]);
      expect(peak).toBeLessThanOrEqual(256 * MiB + 8 * MiB);
      expect(result).toMatchObject({ outOfMemory: true, exitCode: 137 });
      expect(result.message).toMatch(/^OUT_OF_MEMORY: .*256 MiB/);
      expect(concurrent.stdout).toBe('neighbour done\n');
      expect(await supervisorOf(`marker-${workspace}`)).toBe(supervisor);
      // The kernel's OOM killer takes several rounds of six processes: seconds on a busy host.
    }, 60_000);

    it('contains a fork bomb at the process limit', async () => {
      const bomb = await exec(backend, workspace, 'bomb() { bomb | bomb & }; bomb; sleep 2; echo done', 4000);
      expect(bomb.timedOut || bomb.exitCode !== null).toBe(true);
      expect((await exec(backend, other, 'echo alive')).stdout).toBe('alive\n');
    });

    it('throttles a busy workspace at its CPU quota while another user stays responsive', async () => {
      const timeEcho = async () => {
        const started = performance.now();
        await exec(backend, other, 'echo x');
        return performance.now() - started;
      };
      const idle: number[] = [];
      for (let call = 0; call < 20; call += 1) idle.push(await timeEcho());
      const busy = exec(
        backend,
        workspace,
        'for n in 1 2 3 4; do timeout 6 sh -c "while :; do :; done" & done; wait',
        10_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      const loaded: number[] = [];
      for (let call = 0; call < 20; call += 1) loaded.push(await timeEcho());
      const supervisor = (await supervisorOf(`marker-${workspace}`)) as number;
      const cpuStat = await readFile(path.join(await cgroupDirectory(supervisor, 'cpu'), 'cpu.stat'), 'utf8');
      await busy;
      expect(Number(/nr_throttled (\d+)/.exec(cpuStat)?.[1])).toBeGreaterThan(0);
      expect(median(loaded)).toBeLessThanOrEqual(3 * Math.max(median(idle), 5));
    });
  });

  describe('processes of a call, and the supervisor', () => {
    let backend: SandboxBackend;
    const workspace = newWorkspaceId();

    beforeAll(async () => {
      ({ backend } = await createBackend());
      await backend.ensureWorkspace(workspace);
      await exec(backend, workspace, `echo > marker-${workspace}`);
    });

    it('kills everything a call started (background, setsid, nohup, double fork) and nothing else', async () => {
      const tag = Math.floor(Math.random() * 1e6) + 1000;
      const longRunning = exec(backend, workspace, `sleep 3; echo still here`);
      const result = await exec(
        backend,
        workspace,
        `sleep ${tag}1 & setsid sleep ${tag}2 & nohup sleep ${tag}3 >/dev/null 2>&1 & (sleep ${tag}4 &) ; echo started`,
      );
      expect(result).toMatchObject({ exitCode: 0, stdout: 'started\n' });
      expect(
        await eventually(async () => (await hostProcesses(`sleep ${tag}`)).length === 0, { timeoutMs: 2000 }),
      ).toBe(true);
      expect((await longRunning).stdout).toBe('still here\n');
    });

    it('replaces a killed supervisor on the next call', async () => {
      const supervisor = await supervisorOf(`marker-${workspace}`);
      expect(supervisor).toBeDefined();
      process.kill(supervisor as number, 'SIGKILL');
      const next = await exec(backend, workspace, 'cat marker-* > /dev/null && echo works');
      expect(next.stdout).toBe('works\n');
      const replaced = await supervisorOf(`marker-${workspace}`);
      expect(replaced).toBeDefined();
      expect(replaced).not.toBe(supervisor);
    });

    it('denies the syscalls of the seccomp filter with EPERM while the document libraries work', async () => {
      const result = await exec(
        backend,
        workspace,
        `python3 -c "
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
calls = {'keyctl': 250, 'add_key': 248, 'bpf': 321, 'perf_event_open': 298, 'userfaultfd': 323, 'unshare': 272,
         'mount': 165, 'ptrace': 101, 'setns': 308, 'io_uring_setup': 425, 'open_by_handle_at': 304, 'clone3': 435}
for name, number in calls.items():
    result = libc.syscall(number, 0, 0, 0, 0, 0)
    print(name, errno.errorcode.get(ctypes.get_errno(), 'OK') if result == -1 else 'OK')
"
python3 -c "
import pandas, openpyxl, docx, pypdf
pandas.DataFrame({'a': [1, 2, 3]}).to_excel('/tmp/t.xlsx', index=False)
print('rows', len(pandas.read_excel('/tmp/t.xlsx')))
"`,
      );
      const errors = Object.fromEntries(
        result.stdout
          .trim()
          .split('\n')
          .map((line) => line.split(' ')),
      );
      for (const name of [
        'keyctl',
        'add_key',
        'bpf',
        'perf_event_open',
        'userfaultfd',
        'unshare',
        'mount',
        'ptrace',
        'setns',
        'io_uring_setup',
        'open_by_handle_at',
      ]) {
        expect(errors[name], name).toBe('EPERM');
      }
      expect(errors.clone3).toBe('ENOSYS');
      expect(errors.rows).toBe('3');
    });
  });

  describe('hosts that cannot enforce the limits', () => {
    it('is unavailable without cgroups, saying why, unless weak limits are chosen', async () => {
      const { backend } = await createBackend({ cgroupRoot: '/nonexistent/cgroup' });
      await expect(backend.probe()).rejects.toThrow(
        /cgroup root \/nonexistent\/cgroup does not exist.*MORDN_SANDBOX_WEAK_LIMITS/,
      );
      const { backend: weak } = await createBackend({ cgroupRoot: '/nonexistent/cgroup', weakLimits: true });
      await expect(weak.probe()).resolves.toBeUndefined();
      const workspace = newWorkspaceId();
      await weak.ensureWorkspace(workspace);
      expect((await exec(weak, workspace, 'echo weak')).stdout).toBe('weak\n');
    });
  });
});
