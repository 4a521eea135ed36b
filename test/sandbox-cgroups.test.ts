import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type CgroupHierarchy,
  type CgroupLimits,
  openCgroupHierarchy,
  type WorkspaceCgroup,
} from '../src/sandbox/limits/cgroups.js';
import { eventually, pollUntil } from './support/poll.js';

const MIB = 1024 ** 2;
const LIMITS: CgroupLimits = { memoryBytes: 256 * MIB, cpus: 1, processes: 64 };
/** Creating cgroups needs root; this suite proves the v1 code on a host that has v1. */
const available = process.getuid?.() === 0 && existsSync('/sys/fs/cgroup/memory');

/** Whether cpuacct is a v1 hierarchy of its own here rather than co-mounted as `cpu,cpuacct`. */
const cpuacctSeparate =
  available &&
  readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .some((line) => line.split(':')[1] === 'cpuacct');

/** A process started inside a cgroup: it waits on stdin until `release`, so it is inside before it does anything. */
interface HeldProcess {
  child: ChildProcessWithoutNullStreams;
  release(): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/**
 * Whether the process still runs. A killed process whose parent died first stays a zombie until
 * PID 1 reaps it, which here takes about a second; a zombie counts as gone.
 */
function isRunning(pid: number): boolean {
  try {
    // The state follows the parenthesised command name, which may itself contain spaces.
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== undefined && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

describe.skipIf(!available)('workspace cgroups on this host (cgroup v1)', () => {
  let hierarchy: CgroupHierarchy;
  let python: string;
  const cgroups: WorkspaceCgroup[] = [];
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    hierarchy = await openCgroupHierarchy();
    // The real interpreter rather than a version manager's shim, which would run shell scripts first.
    python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  });

  afterEach(async () => {
    for (const cgroup of cgroups.splice(0)) await cgroup.remove();
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });

  /** A cgroup whose name no parallel run of this suite shares. */
  async function createCgroup(purpose: string, limits: Partial<CgroupLimits>): Promise<WorkspaceCgroup> {
    const cgroup = await hierarchy.create(`ws_test_${process.pid}_${purpose}`, { ...LIMITS, ...limits });
    cgroups.push(cgroup);
    return cgroup;
  }

  async function startHeld(cgroup: WorkspaceCgroup, command: string): Promise<HeldProcess> {
    const child = spawn('sh', ['-c', `read go; ${command}`], { stdio: 'pipe' });
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    await cgroup.add(child.pid as number);
    return { child, release: () => child.stdin.end('go\n'), exited, stderr: () => stderr };
  }

  it('uses cgroup v1 below our own cgroup in memory, cpu, pids and cpuacct', () => {
    expect(hierarchy.version).toBe(1);
    // cpuacct has a directory of its own unless it is co-mounted with cpu (`cpu,cpuacct`).
    expect(hierarchy.directories).toHaveLength(cpuacctSeparate ? 4 : 3);
    for (const directory of hierarchy.directories) expect(directory).toMatch(/^\/sys\/fs\/cgroup\/.+\/mordn$/);
  });

  it('places a process in every controller', async () => {
    const cgroup = await createCgroup('add', {});
    const held = await startHeld(cgroup, 'exit 0');
    const lines = readFileSync(`/proc/${held.child.pid}/cgroup`, 'utf8').split('\n');
    for (const controller of ['memory', 'cpu', 'pids', 'cpuacct']) {
      const line = lines.find((candidate) => candidate.split(':')[1]?.split(',').includes(controller));
      expect(line, controller).toMatch(new RegExp(`/mordn/${cgroup.name}$`));
    }
    expect(await cgroup.members()).toEqual([held.child.pid]);
  });

  it('counts the CPU time of every process that was inside, exited ones included', async () => {
    const cgroup = await createCgroup('cpu', {});
    const before = await cgroup.resources();
    expect(before.cpuSeconds).toBe(0);
    const held = await startHeld(
      cgroup,
      `${python} -c "import time\nt=time.process_time()\nwhile time.process_time()-t<0.5: pass"`,
    );
    held.release();
    expect(await held.exited).toEqual({ code: 0, signal: null });
    const after = await cgroup.resources();
    expect(after.instance).toBe(before.instance);
    expect(after.cpuSeconds).toBeGreaterThanOrEqual(0.5);
    expect(after.cpuSeconds).toBeLessThan(1);
    expect(after.memoryBytes).toBeGreaterThanOrEqual(0);
  });

  it('raises and lowers the memory limit with RAM+swap kept equal', async () => {
    const cgroup = await createCgroup('memory', { memoryBytes: 64 * MIB });
    const memoryDirectory = cgroup.directories.find((directory) => directory.includes('/memory/')) as string;
    const limits = () =>
      ['memory.limit_in_bytes', 'memory.memsw.limit_in_bytes']
        .filter((file) => existsSync(`${memoryDirectory}/${file}`))
        .map((file) => Number(readFileSync(`${memoryDirectory}/${file}`, 'utf8')));
    expect(limits().every((bytes) => bytes === 64 * MIB)).toBe(true);
    await cgroup.setLimits({ ...LIMITS, memoryBytes: 128 * MIB });
    expect(limits().every((bytes) => bytes === 128 * MIB)).toBe(true);
    await cgroup.setLimits({ ...LIMITS, memoryBytes: 32 * MIB });
    expect(limits().every((bytes) => bytes === 32 * MIB)).toBe(true);
  });

  it('OOM-kills the process that exceeds the memory limit, and only that one', async () => {
    const cgroup = await createCgroup('oom', { memoryBytes: 64 * MIB });
    const bystander = await startHeld(cgroup, 'exec sleep 30');
    bystander.release();
    const hog = await startHeld(cgroup, `exec ${python} -c "b = bytearray(256*1024*1024); import time; time.sleep(5)"`);
    const killsBefore = await cgroup.oomKills();
    hog.release();
    expect(await hog.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await cgroup.oomKills()).toBeGreaterThanOrEqual(killsBefore + 1);
    expect(bystander.child.exitCode).toBeNull();
    expect(isRunning(bystander.child.pid as number)).toBe(true);
    expect(await cgroup.members()).toEqual([bystander.child.pid]);
    expect(await cgroup.memoryBytes()).toBeLessThanOrEqual(64 * MIB);
  });

  it('throttles a busy loop to half a CPU', async () => {
    const cgroup = await createCgroup('cpu', { cpus: 0.5 });
    const busy = await startHeld(
      cgroup,
      `exec ${python} -c "import time
end = time.time() + 1.5
while time.time() < end: pass"`,
    );
    busy.release();
    expect(await busy.exited).toEqual({ code: 0, signal: null });
    const stat = await cgroup.cpuStat();
    expect(stat.periods).toBeGreaterThan(0);
    expect(stat.throttled).toBeGreaterThan(0);
    expect(stat.throttledMicros).toBeGreaterThan(0);
  });

  it('stops a fork loop at the process limit, and remove() kills everything and deletes the cgroup', async () => {
    const cgroup = await createCgroup('pids', { processes: 5 });
    const forker = await startHeld(cgroup, 'for i in $(seq 20); do sleep 5 & done; wait');
    forker.release();
    expect(
      await eventually(() => /fork|resource temporarily unavailable/i.test(forker.stderr()), { timeoutMs: 5_000 }),
    ).toBe(true);
    const members = await cgroup.members();
    expect(members.length).toBeGreaterThan(1);
    expect(members.length).toBeLessThanOrEqual(5);

    const started = Date.now();
    await cgroup.remove();
    const removalMs = Date.now() - started;
    expect(removalMs).toBeLessThan(5_000);
    for (const directory of cgroup.directories) expect(existsSync(directory), directory).toBe(false);
    const survivors = await pollUntil(
      () => members.filter(isRunning),
      (alive) => alive.length === 0,
      {
        timeoutMs: 5_000,
      },
    );
    expect(survivors).toEqual([]);
  });
});
