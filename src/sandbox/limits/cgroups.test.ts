import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCgroupMounts, parseOwnCgroups } from './cgroup-mounts.js';
import { CgroupUnavailableError, type OpenCgroupHierarchyOptions, openCgroupHierarchy } from './cgroups.js';

const SELF_PID = 4242;
const LIMITS = { memoryBytes: 64 * 1024 ** 2, cpus: 0.5, processes: 5 };

let scratch: string;
/** Every directory removed through `removeDirectory`, in order. */
const removedDirectories: string[] = [];

beforeEach(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'mordn-cgroups-'));
  removedDirectories.length = 0;
});

afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** Writes `files` (paths relative to `base`), creating the directories they sit in. */
async function layOut(base: string, files: Record<string, string>): Promise<void> {
  for (const [relative, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(base, relative)), { recursive: true });
    await writeFile(path.join(base, relative), content);
  }
}

const read = (...parts: string[]) => readFile(path.join(...parts), 'utf8');
const list = (...parts: string[]) => readdir(path.join(...parts));

/**
 * The fake tree's directories are plain ones, which `rmdir` refuses while control files are in
 * them; on cgroupfs those files go with the directory.
 */
const removeDirectory = async (directory: string) => {
  removedDirectories.push(directory);
  await rm(directory, { recursive: true });
};

/**
 * A cgroup v2 host: the unified hierarchy mounted at `<scratch>/cgroup`, our process in `own`.
 * The real root has no cgroup.type; every other cgroup has one.
 */
async function unifiedHost(options: { own: string; controllers?: string; ownProcesses?: number[] }) {
  const root = path.join(scratch, 'cgroup');
  const controllers = options.controllers ?? 'cpuset cpu io memory hugetlb pids rdma misc';
  await layOut(root, { 'cgroup.controllers': controllers, 'cgroup.subtree_control': '', 'cgroup.procs': '1\n' });
  const own = path.join(root, options.own);
  if (options.own !== '/') {
    await layOut(own, {
      'cgroup.type': 'domain\n',
      'cgroup.controllers': controllers,
      'cgroup.subtree_control': '',
      'cgroup.procs': (options.ownProcesses ?? []).map((pid) => `${pid}\n`).join(''),
    });
  }
  const open = (extra: OpenCgroupHierarchyOptions = {}) =>
    openCgroupHierarchy({
      root,
      mountInfo: `30 23 0:26 / ${root} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n`,
      selfCgroup: `0::${options.own}\n`,
      selfPid: SELF_PID,
      removeDirectory,
      ...extra,
    });
  return { root, own, open };
}

/**
 * A hybrid cgroup v1 host as common on older distributions: one mount per controller, a
 * `name=systemd` one and a cgroup2 `unified` mount without controllers, our process in a
 * non-root memory cgroup.
 */
async function legacyHost(options: { cpuMount?: string; leaveOut?: string } = {}) {
  const root = path.join(scratch, 'cgroup');
  const cpuMount = options.cpuMount ?? 'cpu';
  const ownMemory = '/process_api/02dd7706';
  const controllers = ['cpuacct', 'cpuset', 'memory', 'devices', 'freezer', 'blkio', 'pids'].filter(
    (controller) => controller !== options.leaveOut && !(cpuMount.includes(',') && controller === 'cpuacct'),
  );
  const mounts = [cpuMount, ...controllers].map(
    (controller, index) =>
      `${32 + index} 31 0:${29 + index} / ${root}/${controller} rw,relatime - cgroup cgroup rw,${controller}`,
  );
  mounts.push(
    `40 31 0:37 / ${root}/systemd rw,relatime - cgroup cgroup rw,name=systemd`,
    `41 31 0:38 / ${root}/unified rw,relatime - cgroup2 cgroup2 rw`,
  );
  await layOut(root, {
    'unified/cgroup.controllers': '',
    [`${cpuMount}/cgroup.procs`]: '',
    [`memory${ownMemory}/cgroup.procs`]: `${SELF_PID}\n`,
    'pids/cgroup.procs': '',
    ...(cpuMount.includes(',') ? {} : { 'cpuacct/cgroup.procs': '' }),
  });
  const selfCgroup = [
    '9:name=systemd:/',
    '8:pids:/',
    `4:memory:${ownMemory}`,
    `1:${cpuMount}:/`,
    '0::/',
    ...(cpuMount.includes(',') ? [] : ['2:cpuacct:/']),
  ].join('\n');
  const parents = {
    memory: path.join(root, 'memory', ownMemory, 'mordn'),
    cpu: path.join(root, cpuMount, 'mordn'),
    pids: path.join(root, 'pids', 'mordn'),
    cpuacct: path.join(root, cpuMount.includes(',') ? cpuMount : 'cpuacct', 'mordn'),
  };
  const open = () => openCgroupHierarchy({ root, mountInfo: mounts.join('\n'), selfCgroup, removeDirectory });
  return { root, parents, open };
}

describe('openCgroupHierarchy on cgroup v2', () => {
  it('enables memory, cpu and pids from the root down when the service owns the root cgroup', async () => {
    const host = await unifiedHost({ own: '/' });
    const hierarchy = await host.open();
    expect(hierarchy.version).toBe(2);
    expect(hierarchy.location).toBe(path.join(host.root, 'mordn'));
    expect(hierarchy.directories).toEqual([path.join(host.root, 'mordn')]);
    expect(await read(host.root, 'cgroup.subtree_control')).toBe('+memory +cpu +pids');
    expect(await read(host.root, 'mordn', 'cgroup.subtree_control')).toBe('+memory +cpu +pids');
    // The root may hold processes: nothing moves, and the probe is gone again.
    expect(await list(host.root)).not.toContain('service');
    expect(await list(host.root, 'mordn')).toEqual(['cgroup.subtree_control']);
    // A restart finds everything in place.
    expect((await host.open()).location).toBe(hierarchy.location);
  });

  it('leaves cgroup.subtree_control alone where the controllers are already enabled', async () => {
    const host = await unifiedHost({ own: '/' });
    await writeFile(path.join(host.root, 'cgroup.subtree_control'), 'cpu io memory pids\n');
    await host.open();
    expect(await read(host.root, 'cgroup.subtree_control')).toBe('cpu io memory pids\n');
  });

  it('moves our process into a `service` leaf of a delegated systemd cgroup before enabling controllers', async () => {
    const host = await unifiedHost({ own: '/system.slice/mordn.service', ownProcesses: [SELF_PID] });
    const hierarchy = await host.open();
    expect(hierarchy.location).toBe(path.join(host.own, 'mordn'));
    expect(await read(host.own, 'service', 'cgroup.procs')).toBe(String(SELF_PID));
    expect(await read(host.own, 'cgroup.subtree_control')).toBe('+memory +cpu +pids');
    expect(await read(host.own, 'mordn', 'cgroup.subtree_control')).toBe('+memory +cpu +pids');
    // The service's parent slice is not ours to change.
    expect(await read(host.root, 'cgroup.subtree_control')).toBe('');
  });

  it('makes no leaf when the delegated cgroup already holds no processes', async () => {
    const host = await unifiedHost({ own: '/system.slice/mordn.service', ownProcesses: [] });
    await host.open();
    expect(await list(host.own)).not.toContain('service');
    expect(await read(host.own, 'cgroup.subtree_control')).toBe('+memory +cpu +pids');
  });

  it('finds our cgroup through a mount that shows only a subtree, as in a container', async () => {
    const root = path.join(scratch, 'cgroup');
    await layOut(root, {
      'cgroup.type': 'domain\n',
      'cgroup.controllers': 'cpu memory pids',
      'cgroup.subtree_control': '',
      'cgroup.procs': `${SELF_PID}\n`,
    });
    const hierarchy = await openCgroupHierarchy({
      root,
      mountInfo: `1420 1419 0:26 /docker/3f1c ${root} ro,nosuid - cgroup2 cgroup2 rw,nsdelegate`,
      selfCgroup: '0::/docker/3f1c',
      selfPid: SELF_PID,
    });
    expect(hierarchy.location).toBe(path.join(root, 'mordn'));
    // The container's own cgroup is not the real root, so its processes move out first.
    expect(await read(root, 'service', 'cgroup.procs')).toBe(String(SELF_PID));
  });

  it('names the controller the hierarchy does not offer', async () => {
    const host = await unifiedHost({ own: '/', controllers: 'cpuset cpu io memory' });
    const opening = host.open();
    await expect(opening).rejects.toBeInstanceOf(CgroupUnavailableError);
    await expect(opening).rejects.toThrow(
      `the cgroup v2 hierarchy at ${host.root} does not offer pids to our cgroup / ` +
        '(cgroup.controllers: "cpuset cpu io memory")',
    );
  });
});

describe('workspace cgroups on cgroup v2', () => {
  it('writes memory.max, cpu.max and pids.max of a fresh cgroup', async () => {
    const host = await unifiedHost({ own: '/' });
    const cgroup = await (await host.open()).create('ws_0123abc', LIMITS);
    const directory = path.join(host.root, 'mordn', 'ws_0123abc');
    expect(cgroup.name).toBe('ws_0123abc');
    expect(cgroup.directories).toEqual([directory]);
    expect(await read(directory, 'memory.max')).toBe(String(64 * 1024 ** 2));
    expect(await read(directory, 'cpu.max')).toBe('50000 100000');
    expect(await read(directory, 'pids.max')).toBe('5');
    // A kernel without swap accounting has no memory.swap.max to write.
    expect(await list(directory)).toEqual(['cpu.max', 'memory.max', 'pids.max']);
  });

  it('adopts a cgroup left by an earlier run, turning off swap and group OOM kills', async () => {
    const host = await unifiedHost({ own: '/' });
    const directory = path.join(host.root, 'mordn', 'ws_1');
    await layOut(directory, { 'memory.swap.max': 'max\n', 'memory.oom.group': '1\n', 'pids.max': 'max\n' });
    const cgroup = await (await host.open()).create('ws_1', { memoryBytes: 1024 ** 3, cpus: 2, processes: 300 });
    expect(await read(directory, 'memory.max')).toBe(String(1024 ** 3));
    expect(await read(directory, 'memory.swap.max')).toBe('0');
    expect(await read(directory, 'memory.oom.group')).toBe('0');
    expect(await read(directory, 'cpu.max')).toBe('200000 100000');
    expect(await read(directory, 'pids.max')).toBe('300');
    await cgroup.setLimits({ memoryBytes: 2 * 1024 ** 3, cpus: 0.001, processes: 10 });
    expect(await read(directory, 'memory.max')).toBe(String(2 * 1024 ** 3));
    expect(await read(directory, 'cpu.max')).toBe('1000 100000');
    expect(await read(directory, 'pids.max')).toBe('10');
  });

  it('reads OOM kills, CPU throttling, memory use and members from the cgroup files', async () => {
    const host = await unifiedHost({ own: '/' });
    const cgroup = await (await host.open()).create('ws_1', LIMITS);
    const directory = path.join(host.root, 'mordn', 'ws_1');
    await layOut(directory, {
      'memory.events': 'low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 0\n',
      'cpu.stat':
        'usage_usec 900\nuser_usec 800\nsystem_usec 100\nnr_periods 12\nnr_throttled 4\nthrottled_usec 3100\n',
      'memory.current': '4096000\n',
      'memory.stat': 'anon 4000000\nfile 96000\ninactive_file 96000\n',
    });
    expect(await cgroup.oomKills()).toBe(2);
    expect(await cgroup.cpuStat()).toEqual({ periods: 12, throttled: 4, throttledMicros: 3100 });
    expect(await cgroup.memoryBytes()).toBe(4096000);
    const resources = await cgroup.resources();
    // Memory as `docker stats` counts it: less the inactive file cache.
    expect(resources).toMatchObject({ cpuSeconds: 0.0009, memoryBytes: 4000000 });
    expect(resources.instance).toMatch(/^\d+-\d+$/);
    expect(resources.startedAt).toBeGreaterThan(Date.now() - 60_000);
    await cgroup.add(31337);
    expect(await read(directory, 'cgroup.procs')).toBe('31337');
    await writeFile(path.join(directory, 'cgroup.procs'), '31337\n31338\n');
    expect(await cgroup.members()).toEqual([31337, 31338]);
  });

  it('kills through cgroup.kill, then removes the directory', async () => {
    const host = await unifiedHost({ own: '/' });
    const directory = path.join(host.root, 'mordn', 'ws_1');
    await layOut(directory, { 'cgroup.kill': '', 'cgroup.procs': '' });
    let killWritten: string | undefined;
    const hierarchy = await host.open({
      removeDirectory: async (target) => {
        if (target === directory) killWritten = await read(target, 'cgroup.kill');
        await removeDirectory(target);
      },
    });
    await (await hierarchy.create('ws_1', LIMITS)).remove();
    expect(killWritten).toBe('1');
    expect(removedDirectories).toContain(directory);
    expect(await list(host.root, 'mordn')).toEqual(['cgroup.subtree_control']);
  });

  it('gives up on a cgroup that stays busy after a bounded time, without rejecting', async () => {
    const host = await unifiedHost({ own: '/' });
    const directory = path.join(host.root, 'mordn', 'ws_1');
    const hierarchy = await host.open({
      removeTimeoutMs: 200,
      removeDirectory: async (target) => {
        if (target === directory) throw Object.assign(new Error('busy'), { code: 'EBUSY' });
        await removeDirectory(target);
      },
    });
    const cgroup = await hierarchy.create('ws_1', LIMITS);
    const started = Date.now();
    await expect(cgroup.remove()).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await list(host.root, 'mordn')).toContain('ws_1');
  });
});

describe('openCgroupHierarchy on cgroup v1', () => {
  it('uses the memory, cpu, pids and cpuacct mounts, below our own (non-root) memory cgroup', async () => {
    const host = await legacyHost();
    const hierarchy = await host.open();
    expect(hierarchy.version).toBe(1);
    const { memory, cpu, pids, cpuacct } = host.parents;
    expect(hierarchy.directories).toEqual([memory, cpu, pids, cpuacct]);
    expect(hierarchy.location).toBe(`${memory}, ${cpu}, ${pids}, ${cpuacct}`);
    for (const parent of hierarchy.directories) expect(await list(parent)).toEqual([]);
  });

  it('accepts cpu co-mounted with cpuacct', async () => {
    const host = await legacyHost({ cpuMount: 'cpu,cpuacct' });
    const hierarchy = await host.open();
    const { memory, cpu, pids } = host.parents;
    expect(cpu).toBe(path.join(host.root, 'cpu,cpuacct', 'mordn'));
    expect(hierarchy.directories).toEqual([memory, cpu, pids]);
    const cgroup = await hierarchy.create('ws_1', LIMITS);
    await layOut(path.join(cpu, 'ws_1'), { 'cpuacct.usage': '2500000000\n' });
    await layOut(path.join(memory, 'ws_1'), { 'memory.usage_in_bytes': '4096\n', 'memory.stat': '' });
    expect(await cgroup.resources()).toMatchObject({ cpuSeconds: 2.5, memoryBytes: 4096 });
  });

  it('names the cpuacct controller when it is not mounted', async () => {
    const host = await legacyHost({ leaveOut: 'cpuacct' });
    await expect(host.open()).rejects.toThrow(`the cpuacct controller is not mounted under ${host.root}`);
  });

  it('names the controller that is not mounted', async () => {
    const host = await legacyHost({ leaveOut: 'pids' });
    const opening = host.open();
    await expect(opening).rejects.toBeInstanceOf(CgroupUnavailableError);
    await expect(opening).rejects.toThrow(`the pids controller is not mounted under ${host.root}`);
  });

  it('reports a parent it cannot create cgroups in', async () => {
    const host = await legacyHost();
    // A file where the pids parent should be: the probe below it fails.
    await mkdir(path.dirname(host.parents.pids), { recursive: true });
    await writeFile(host.parents.pids, '');
    await expect(host.open()).rejects.toThrow(`cannot create cgroups below ${host.parents.pids}: ENOTDIR`);
  });
});

describe('workspace cgroups on cgroup v1', () => {
  it('writes the memory limit, the CFS quota and pids.max in each controller', async () => {
    const host = await legacyHost();
    const cgroup = await (await host.open()).create('ws_1', LIMITS);
    const memory = path.join(host.parents.memory, 'ws_1');
    const cpu = path.join(host.parents.cpu, 'ws_1');
    const pids = path.join(host.parents.pids, 'ws_1');
    const cpuacct = path.join(host.parents.cpuacct, 'ws_1');
    expect(cgroup.directories).toEqual([memory, cpu, pids, cpuacct]);
    expect(await read(memory, 'memory.limit_in_bytes')).toBe(String(64 * 1024 ** 2));
    // Without swap accounting there is no memsw file, and the OOM killer is left enabled.
    expect(await list(memory)).toEqual(['memory.limit_in_bytes']);
    expect(await read(cpu, 'cpu.cfs_period_us')).toBe('100000');
    expect(await read(cpu, 'cpu.cfs_quota_us')).toBe('50000');
    expect(await read(pids, 'pids.max')).toBe('5');
  });

  it('limits RAM+swap to the same amount when swap accounting is on', async () => {
    const host = await legacyHost();
    const memory = path.join(host.parents.memory, 'ws_1');
    await layOut(memory, {
      'memory.limit_in_bytes': '9223372036854771712\n',
      'memory.memsw.limit_in_bytes': '9223372036854771712\n',
    });
    const cgroup = await (await host.open()).create('ws_1', LIMITS);
    expect(await read(memory, 'memory.limit_in_bytes')).toBe(String(64 * 1024 ** 2));
    expect(await read(memory, 'memory.memsw.limit_in_bytes')).toBe(String(64 * 1024 ** 2));
    await cgroup.setLimits({ ...LIMITS, memoryBytes: 128 * 1024 ** 2 });
    expect(await read(memory, 'memory.limit_in_bytes')).toBe(String(128 * 1024 ** 2));
    expect(await read(memory, 'memory.memsw.limit_in_bytes')).toBe(String(128 * 1024 ** 2));
  });

  it('reads oom_control, cpu.stat (nanoseconds) and usage, and adds a process to every controller', async () => {
    const host = await legacyHost();
    const cgroup = await (await host.open()).create('ws_1', LIMITS);
    const [memory, cpu, pids, cpuacct] = cgroup.directories as [string, string, string, string];
    await layOut(memory, {
      'memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n',
      'memory.usage_in_bytes': '123456\n',
      'memory.stat': 'cache 30000\ninactive_file 1000\ntotal_inactive_file 23456\n',
    });
    await layOut(cpu, {
      'cpu.stat': 'nr_periods 20\nnr_throttled 5\nthrottled_time 7000000\nnr_bursts 0\nburst_time 0\n',
    });
    expect(await cgroup.oomKills()).toBe(3);
    expect(await cgroup.cpuStat()).toEqual({ periods: 20, throttled: 5, throttledMicros: 7000 });
    expect(await cgroup.memoryBytes()).toBe(123456);
    await layOut(cpuacct, { 'cpuacct.usage': '1500000000\n' });
    expect(await cgroup.resources()).toMatchObject({ cpuSeconds: 1.5, memoryBytes: 100000 });
    await cgroup.add(31337);
    for (const directory of [memory, cpu, pids, cpuacct]) expect(await read(directory, 'cgroup.procs')).toBe('31337');
    await writeFile(path.join(memory, 'cgroup.procs'), '31338\n31337\n');
    expect(await cgroup.members()).toEqual([31337, 31338]);
  });

  it('removes what it made when a write fails, naming the file and the errno', async () => {
    const host = await legacyHost();
    // pids.max as a directory: writing it fails with EISDIR after memory and cpu were set.
    await mkdir(path.join(host.parents.pids, 'ws_1', 'pids.max'), { recursive: true });
    const hierarchy = await host.open();
    await expect(hierarchy.create('ws_1', LIMITS)).rejects.toThrow(
      `cannot write "5" to ${path.join(host.parents.pids, 'ws_1', 'pids.max')}: EISDIR`,
    );
    expect(await list(host.parents.memory)).toEqual([]);
    expect(await list(host.parents.cpu)).toEqual([]);
    // Adopted from an earlier run, so not this call's to remove.
    expect(await list(host.parents.pids)).toEqual(['ws_1']);
  });

  it('names a cgroup made again with another instance, and one adopted with the same', async () => {
    const host = await legacyHost();
    const hierarchy = await host.open();
    const files = { 'cpuacct.usage': '0\n' };
    const first = await hierarchy.create('ws_1', LIMITS);
    await layOut(path.join(host.parents.cpuacct, 'ws_1'), files);
    await layOut(path.join(host.parents.memory, 'ws_1'), { 'memory.usage_in_bytes': '0\n', 'memory.stat': '' });
    const before = await first.resources();
    expect((await (await host.open()).create('ws_1', LIMITS).then((adopted) => adopted.resources())).instance).toBe(
      before.instance,
    );
    await first.remove();
    const again = await hierarchy.create('ws_1', LIMITS);
    await layOut(path.join(host.parents.cpuacct, 'ws_1'), files);
    await layOut(path.join(host.parents.memory, 'ws_1'), { 'memory.usage_in_bytes': '0\n', 'memory.stat': '' });
    const after = await again.resources();
    expect(after.instance).not.toBe(before.instance);
    expect(after.startedAt).toBeGreaterThanOrEqual(before.startedAt);
  });

  it('removes every controller directory', async () => {
    const host = await legacyHost();
    const cgroup = await (await host.open()).create('ws_1', LIMITS);
    await cgroup.remove();
    expect(removedDirectories).toEqual(expect.arrayContaining([...cgroup.directories]));
    for (const parent of Object.values(host.parents)) expect(await list(parent)).toEqual([]);
  });
});

describe('openCgroupHierarchy refuses', () => {
  it('a root that does not exist', async () => {
    const root = path.join(scratch, 'nonexistent');
    await expect(openCgroupHierarchy({ root, mountInfo: '', selfCgroup: '' })).rejects.toThrow(
      new CgroupUnavailableError(`cgroup root ${root} does not exist`),
    );
  });

  it('mounts outside the root', async () => {
    const host = await legacyHost();
    const root = path.join(scratch, 'elsewhere');
    await mkdir(root);
    const mountInfo = `35 31 0:32 / ${host.root}/memory rw,relatime - cgroup cgroup rw,memory`;
    await expect(openCgroupHierarchy({ root, mountInfo, selfCgroup: '4:memory:/' })).rejects.toThrow(
      `no cgroup filesystem is mounted under ${root}`,
    );
  });
});

describe('names and limits', () => {
  it.each(['', '../escape', 'ws.1', 'a/b', 'x'.repeat(65), '.probe-1'])('refuses the name %j', async (name) => {
    const host = await unifiedHost({ own: '/' });
    const hierarchy = await host.open();
    await expect(hierarchy.create(name, LIMITS)).rejects.toThrow(TypeError);
    expect(await list(host.root, 'mordn')).toEqual(['cgroup.subtree_control']);
  });

  it('accepts a 64-character workspace id', async () => {
    const host = await unifiedHost({ own: '/' });
    const cgroup = await (await host.open()).create(`ws_${'a'.repeat(61)}`, LIMITS);
    expect(cgroup.name).toHaveLength(64);
  });

  it.each([
    [{ ...LIMITS, memoryBytes: 0 }, 'limits.memoryBytes must be a positive integer.'],
    [{ ...LIMITS, processes: 1.5 }, 'limits.processes must be a positive integer.'],
    [{ ...LIMITS, cpus: Number.NaN }, 'limits.cpus must be a positive number.'],
  ])('refuses the limits %j', async (limits, message) => {
    const host = await unifiedHost({ own: '/' });
    await expect((await host.open()).create('ws_1', limits)).rejects.toThrow(new TypeError(message));
  });
});

describe('parsing /proc/self texts', () => {
  it('reads cgroup mounts with optional fields and escaped paths, ignoring other mounts', () => {
    const text = [
      '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
      '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 master:2 - cgroup cgroup rw,cpu,cpuacct',
      '41 31 0:38 /docker/abc /my\\040cgroups rw,relatime - cgroup2 cgroup2 rw',
    ].join('\n');
    expect(parseCgroupMounts(text)).toEqual([
      { mountPoint: '/sys/fs/cgroup/cpu,cpuacct', root: '/', version: 1, controllers: ['cpu', 'cpuacct'] },
      { mountPoint: '/my cgroups', root: '/docker/abc', version: 2, controllers: [] },
    ]);
  });

  it('reads our own cgroup per controller, with colons in paths', () => {
    const own = parseOwnCgroups('4:memory:/process_api/02dd\n2:cpu,cpuacct:/a:b\n1:name=systemd:/\n0::/\n');
    expect(own.get('memory')).toBe('/process_api/02dd');
    expect(own.get('cpu')).toBe('/a:b');
    expect(own.get('cpuacct')).toBe('/a:b');
    expect(own.get('')).toBe('/');
  });
});
