import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { SANDBOX_IMAGE_CONTRACT, SANDBOX_IMAGE_CONTRACT_LABEL } from '../../src/sandbox/docker/container-spec.js';
import { createEngineApi } from '../../src/sandbox/docker/engine-api.js';
import { hostProcesses, isRunning } from './host-processes.js';
import { eventually } from './poll.js';
import { removeWorkspacesRoot } from './workspace-roots.js';

const runFile = promisify(execFile);

/** How long the daemon may take to answer `/_ping` after it was started. */
const READY_TIMEOUT_MS = 20_000;
/** How long a SIGTERM'd daemon (and its containerd, shims and containers) may take to be gone. */
const STOP_TIMEOUT_MS = 15_000;

/**
 * A Docker daemon of its own — data root, exec root (and with it its own containerd), pid file,
 * socket and config file in one temporary directory — which a test may stop and start again
 * without touching the machine's shared daemon at /var/run/docker.sock.
 */
export interface PrivateDockerd {
  /** `unix://<dir>/docker.sock`. */
  host: string;
  /** The daemon's `--exec-root`: every process of this daemon (containerd, shims) names it. */
  execRoot: string;
  /** SIGTERM, then waits until the daemon, its containerd, its shims and its containers are gone. */
  stop(): Promise<void>;
  /**
   * SIGKILL for dockerd, as when it crashes: its containerd dies with it, its shims and containers
   * run on, and the next `start` finds them.
   */
  crash(): Promise<void>;
  /** Starts the stopped daemon again on the same data root and socket; resolves once it answers. */
  start(): Promise<void>;
  /**
   * Host pids still left of this daemon: processes naming its exec root (dockerd, containerd,
   * `containerd-shim`) and every process in the cgroup of a container it ran.
   */
  leftovers(): Promise<number[]>;
  /** Stops the daemon (SIGKILL for whatever is left), unmounts and removes its directory. Safe twice. */
  close(): Promise<void>;
}

/** `/usr/sbin/dockerd`, or `dockerd` on PATH; none when Docker's daemon is not installed. */
export function dockerdPath(): string | undefined {
  const onPath = (process.env.PATH ?? '')
    .split(':')
    .filter((directory) => directory !== '')
    .map((directory) => path.join(directory, 'dockerd'));
  return ['/usr/sbin/dockerd', ...onPath].find((candidate) => existsSync(candidate));
}

/** Host pids in the cgroup of any of `containerIds` (cgroup v1 or v2, cgroupfs or systemd driver). */
async function processesOfContainers(containerIds: ReadonlySet<string>): Promise<number[]> {
  if (containerIds.size === 0) return [];
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cgroups = await readFile(`/proc/${name}/cgroup`, 'utf8').catch(() => '');
    if ([...containerIds].some((id) => cgroups.includes(id))) pids.push(Number(name));
  }
  return pids;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts a private `dockerd` (root only) in a fresh temporary directory: no bridge, no iptables
 * rules, an empty config file (so the machine's /etc/docker/daemon.json is not read), and no
 * `--containerd`, so it runs a containerd of its own below its exec root. Containers get one
 * second to stop on shutdown, so a stop is quick.
 *
 * @example
 * const daemon = await startPrivateDockerd();
 * try { await daemon.stop(); await daemon.start(); } finally { await daemon.close(); }
 */
export async function startPrivateDockerd(): Promise<PrivateDockerd> {
  const binary = dockerdPath();
  if (!binary) throw new Error('No dockerd (install docker.io).');
  // Short: containerd's sockets live below the exec root, and a socket path has 107 bytes at most.
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-dockerd-'));
  const execRoot = path.join(directory, 'exec');
  const socket = path.join(directory, 'docker.sock');
  const logFile = path.join(directory, 'dockerd.log');
  const host = `unix://${socket}`;
  await Promise.all([
    mkdir(path.join(directory, 'data')),
    mkdir(execRoot),
    writeFile(path.join(directory, 'daemon.json'), '{}'),
  ]);
  const args = [
    `--config-file=${path.join(directory, 'daemon.json')}`,
    `--data-root=${path.join(directory, 'data')}`,
    `--exec-root=${execRoot}`,
    `--pidfile=${path.join(directory, 'docker.pid')}`,
    `--host=${host}`,
    '--bridge=none',
    '--iptables=false',
    '--ip6tables=false',
    '--shutdown-timeout=1',
  ];
  const api = createEngineApi(host);
  /** Every container this daemon ran, for the leftover check (their processes name no exec root). */
  const containerIds = new Set<string>();
  let daemon: ChildProcess | undefined;
  let closed = false;

  const rememberContainers = async () => {
    const { body } = await api.call<Array<{ Id: string }>>({ method: 'GET', path: '/containers/json?all=true' });
    for (const container of body ?? []) containerIds.add(container.Id);
  };

  const leftovers = async () => [
    ...new Set([...(await hostProcesses(execRoot)), ...(await processesOfContainers(containerIds))]),
  ];

  const start = async () => {
    const log = openSync(logFile, 'a');
    try {
      daemon = spawn(binary, args, { stdio: ['ignore', log, log], detached: true });
    } finally {
      closeSync(log);
    }
    const child = daemon;
    const answering = await eventually(
      async () => {
        if (child.exitCode !== null) return true;
        return api.call({ method: 'GET', path: '/_ping' }).then(
          () => true,
          () => false,
        );
      },
      { timeoutMs: READY_TIMEOUT_MS, intervalMs: 100 },
    );
    if (!answering || child.exitCode !== null) {
      throw new Error(`The private dockerd did not start:\n${await readFile(logFile, 'utf8').catch(() => '')}`);
    }
  };

  const stop = async () => {
    const child = daemon;
    if (!child) return;
    await rememberContainers().catch(() => undefined);
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited(child).then(() => true), delay(STOP_TIMEOUT_MS).then(() => false)]);
    if (!stopped) throw new Error(`The private dockerd did not stop within ${STOP_TIMEOUT_MS / 1000} s.`);
    daemon = undefined;
    const gone = await eventually(async () => (await leftovers()).length === 0, {
      timeoutMs: STOP_TIMEOUT_MS,
      intervalMs: 100,
    });
    if (!gone) throw new Error(`The private dockerd left processes behind: ${(await leftovers()).join(', ')}`);
  };

  const crash = async () => {
    const child = daemon;
    if (!child) return;
    await rememberContainers().catch(() => undefined);
    child.kill('SIGKILL');
    await exited(child);
    daemon = undefined;
    // Its containerd dies with it (a parent-death signal). Where this host's init does not reap
    // orphans it stays a zombie, which the next dockerd would take for a live containerd.
    const pidFile = path.join(execRoot, 'containerd', 'containerd.pid');
    const containerd = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (containerd > 0) {
      await eventually(async () => !(await isRunning(containerd)), { timeoutMs: STOP_TIMEOUT_MS, intervalMs: 50 });
      await rm(pidFile, { force: true });
    }
  };

  const close = async () => {
    if (closed) return;
    closed = true;
    await stop().catch(() => undefined);
    daemon?.kill('SIGKILL');
    for (const pid of await leftovers()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
    await api.close();
    await removeWorkspacesRoot(directory);
  };

  try {
    await start();
  } catch (error) {
    await close();
    throw error;
  }
  return {
    host,
    execRoot,
    stop,
    crash,
    start,
    leftovers,
    close,
  };
}

/** What a workspace container needs of its image: the supervisor's Python, a shell, `sleep` and a few tools. */
const MINIMAL_IMAGE_BINARIES = [
  '/usr/bin/python3.11',
  '/usr/bin/dash',
  '/usr/bin/sleep',
  '/usr/bin/cat',
  '/usr/bin/ls',
  '/usr/bin/rm',
];
/** The only extension modules the supervisor and the file helper load. */
const MINIMAL_IMAGE_MODULES = ['_ctypes', '_json', 'resource'];
const PYTHON_LIBRARY = '/usr/lib/python3.11';
/** Where Debian's python3-seccomp keeps its module (the seccomp filter's loader imports it). */
const DIST_PACKAGES = '/usr/lib/python3/dist-packages';
/** Parts of the standard library nothing in a workspace container imports (the build config is 25 MB). */
const UNUSED_LIBRARY_PARTS = [
  'config-3.11-x86_64-linux-gnu',
  'test',
  'idlelib',
  'tkinter',
  'lib2to3',
  'ensurepip',
  'pydoc_data',
];

/** The host's Debian Python a minimal image is made of; none when it is missing. */
export async function minimalImageMissing(): Promise<string | undefined> {
  const missing = [...MINIMAL_IMAGE_BINARIES, PYTHON_LIBRARY].filter((file) => !existsSync(file));
  if (missing.length > 0) return `no ${missing.join(', ')} on this host for the minimal sandbox image`;
  if ((await seccompModules()).length === 0)
    return `no python3-seccomp in ${DIST_PACKAGES} for the minimal sandbox image`;
  return runFile('docker', ['--version']).then(
    () => undefined,
    () => 'no docker CLI (it imports the minimal sandbox image)',
  );
}

/** The host's python3-seccomp module files. */
async function seccompModules(): Promise<string[]> {
  const names = await readdir(DIST_PACKAGES).catch(() => [] as string[]);
  return names.filter((name) => /^seccomp\.cpython-.*\.so$/.test(name)).map((name) => path.join(DIST_PACKAGES, name));
}

/** The shared libraries `binaries` load, as `ldd` resolves them (the loader included). */
async function sharedLibraries(binaries: readonly string[]): Promise<string[]> {
  const libraries = new Set<string>();
  for (const binary of binaries) {
    const { stdout } = await runFile('ldd', [binary]);
    for (const match of stdout.matchAll(/(?:=> )?(\/\S+) \(0x/g)) if (match[1]) libraries.add(match[1]);
  }
  return [...libraries];
}

/**
 * Imports into the daemon at `host`, as `tag`, the smallest image a workspace container runs
 * on: this host's Debian Python 3.11 (standard library without its build config, tests and
 * GUI) with libseccomp's bindings, dash as /bin/sh, `sleep`, `cat`, `ls` and `rm`, and the sandbox user's /workspace —
 * some 30 MB instead of the full sandbox image's 540, so a private daemon has it in seconds.
 * Returns how long the import took.
 */
export async function importMinimalSandboxImage(host: string, tag: string): Promise<number> {
  const started = performance.now();
  const staging = await mkdtemp(path.join(tmpdir(), 'mordn-minimal-image-'));
  const archive = `${staging}.tar`;
  try {
    // The image's / is this directory: readable by the sandbox user, unlike what mkdtemp makes.
    await chmod(staging, 0o755);
    await Promise.all(['etc', 'workspace', 'tmp'].map((name) => mkdir(path.join(staging, name))));
    await chmod(path.join(staging, 'tmp'), 0o1777);
    await mkdir(path.join(staging, 'usr', 'bin'), { recursive: true });
    await writeFile(
      path.join(staging, 'etc', 'passwd'),
      'root:x:0:0::/root:/bin/sh\nsandbox:x:1000:1000::/workspace:/bin/sh\n',
    );
    await writeFile(path.join(staging, 'etc', 'group'), 'root:x:0:\nsandbox:x:1000:\n');
    // The names the backend and the shell look for, as links inside the image.
    await Promise.all([
      symlink('python3.11', path.join(staging, 'usr', 'bin', 'python3')),
      symlink('dash', path.join(staging, 'usr', 'bin', 'sh')),
      symlink('usr/bin', path.join(staging, 'bin')),
      symlink('usr/lib', path.join(staging, 'lib')),
      symlink('usr/lib64', path.join(staging, 'lib64')),
    ]);
    const library = path.join(staging, PYTHON_LIBRARY);
    await mkdir(path.dirname(library), { recursive: true });
    await runFile('cp', ['-a', PYTHON_LIBRARY, path.dirname(library)]);
    for (const part of UNUSED_LIBRARY_PARTS) await rm(path.join(library, part), { recursive: true, force: true });
    const dynload = path.join(library, 'lib-dynload');
    const modules: string[] = [];
    for (const name of await readdir(dynload)) {
      if (MINIMAL_IMAGE_MODULES.some((module) => name.startsWith(`${module}.cpython-`))) {
        modules.push(path.join(PYTHON_LIBRARY, 'lib-dynload', name));
      } else {
        await rm(path.join(dynload, name), { recursive: true, force: true });
      }
    }
    // libseccomp's bindings, for the seccomp filter the supervisor is started under.
    const seccomp = await seccompModules();
    modules.push(...seccomp);
    // Usr-merged host: /lib and /lib64 are links, so everything is stored below usr/.
    const hostFiles = [
      ...MINIMAL_IMAGE_BINARIES,
      ...seccomp,
      ...(await sharedLibraries([...MINIMAL_IMAGE_BINARIES, ...modules])),
    ];
    for (const file of hostFiles) {
      const target = path.join(staging, file.replace(/^\/(lib|lib64)\//, '/usr/$1/'));
      await mkdir(path.dirname(target), { recursive: true });
      await runFile('cp', ['--dereference', '--preserve=mode', file, target]);
    }
    await runFile('chown', ['1000:1000', path.join(staging, 'workspace')]);
    await runFile('tar', ['--create', `--file=${archive}`, `--directory=${staging}`, '.']);
    await runFile('docker', [
      '-H',
      host,
      'import',
      '--change',
      'USER 1000:1000',
      '--change',
      'WORKDIR /workspace',
      '--change',
      'ENV PATH=/usr/local/bin:/usr/bin:/bin',
      '--change',
      `LABEL ${SANDBOX_IMAGE_CONTRACT_LABEL}=${SANDBOX_IMAGE_CONTRACT}`,
      archive,
      tag,
    ]);
    return performance.now() - started;
  } finally {
    await rm(staging, { recursive: true, force: true });
    await rm(archive, { force: true });
  }
}
