import { lstat, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { ProcessLimits } from '../runtime/limits.js';

/** The only user inside every sandbox; its host uid is whatever runs bwrap. */
export const SANDBOX_UID = 1000;
/** Where the file helper appears inside a sandbox that runs file operations. */
export const HELPER_PATH = '/opt/mordn/fileops.py';
/** Where the supervisor appears inside a workspace sandbox. */
export const SUPERVISOR_PATH = '/opt/mordn/supervisor.py';
/** The sandbox's only writable persistent directory, its cwd and HOME. */
export const WORKSPACE_MOUNT = '/workspace';

const SETPRIV_PATH = '/usr/bin/setpriv';
/** Where the staging bwrap puts the workspace for the sandbox's own bwrap (see `stagingPrefix`). */
export const STAGE_MOUNT = '/mordn-stage';
const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The limits of every sandboxed command: the workspace's cgroup and filesystem hold them, rlimits per process. */
export type SandboxLimits = ProcessLimits;

/** The host's top-level system entries and /etc files the sandbox mirrors, found once. */
export interface HostLayout {
  /** `/bin`, `/sbin`, `/lib`, `/lib64`: symlinks on merged-/usr systems, directories elsewhere. */
  topLevel: Array<{ name: string; symlinkTarget?: string }>;
  /** The few /etc entries programs need (dynamic loader cache, alternatives, time zone, certificates). */
  etc: string[];
}

const TOP_LEVEL = ['bin', 'sbin', 'lib', 'lib64'];
const ETC_ENTRIES = ['ld.so.cache', 'alternatives', 'localtime', 'ssl/certs', 'mime.types', 'matplotlibrc'];

const PASSWD = [
  'root:x:0:0:root:/nonexistent:/usr/sbin/nologin',
  `sandbox:x:${SANDBOX_UID}:${SANDBOX_UID}:sandbox:${WORKSPACE_MOUNT}:/bin/sh`,
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
  '',
].join('\n');
const GROUP = ['root:x:0:', `sandbox:x:${SANDBOX_UID}:`, 'nogroup:x:65534:', ''].join('\n');
// No network, but programs that look up "localhost" should not wait on a DNS that is not there.
const HOSTS = ['127.0.0.1 localhost', '::1 localhost', '127.0.1.1 sandbox', ''].join('\n');

/** Inspects `/` and `/etc` of this host; entries that do not exist are left out. */
export async function detectHostLayout(): Promise<HostLayout> {
  const topLevel: HostLayout['topLevel'] = [];
  for (const name of TOP_LEVEL) {
    const info = await lstat(`/${name}`).catch(() => undefined);
    if (info?.isSymbolicLink()) topLevel.push({ name, symlinkTarget: await readlink(`/${name}`) });
    else if (info?.isDirectory()) topLevel.push({ name });
  }
  const etc: string[] = [];
  for (const entry of ETC_ENTRIES) {
    if (await lstat(path.join('/etc', entry)).catch(() => undefined)) etc.push(entry);
  }
  return { topLevel, etc };
}

function topLevelArguments(layout: HostLayout): string[] {
  return layout.topLevel.flatMap(({ name, symlinkTarget }) =>
    symlinkTarget === undefined ? ['--ro-bind', `/${name}`, `/${name}`] : ['--symlink', symlinkTarget, `/${name}`],
  );
}

/** What varies between sandboxes: the workspace, the /tmp size, and whether the file helper is in. */
export interface SandboxShape {
  layout: HostLayout;
  /** Host directory bound read-write at /workspace. */
  workspaceDirectory: string;
  tmpBytes: number;
  /** The file helper's source, bound read-only at HELPER_PATH. */
  helper?: Buffer;
  /** The supervisor's source, bound read-only at SUPERVISOR_PATH; it then runs as PID 1. */
  supervisor?: Buffer;
  /** The compiled seccomp filter (see `limits/seccomp.ts`), loaded by bwrap right before exec. */
  seccomp?: Buffer;
}

/**
 * The bwrap options for one sandbox, and the synthesized files they read from inherited pipes:
 * `dataFiles[i]` must be written to file descriptor `firstDataFd + i`.
 *
 * What the sandbox gets, and nothing more: new user (uid/gid 1000, no capabilities, no nested
 * user namespaces), pid, network (loopback only), ipc, uts and cgroup namespaces; a new session
 * (no TIOCSTI into the service's terminal); an empty environment but for five fixed variables;
 * `/usr` and the few /etc entries read-only; its own /proc and a minimal /dev; size-capped tmpfs
 * `/tmp` and `/dev/shm`; the workspace read-write at /workspace. Everything else, `/` included,
 * is a read-only empty tmpfs, so the host's `/root`, `/home`, `/var`, the service's data
 * directory and other workspaces do not exist inside.
 */
export function sandboxArguments(
  shape: SandboxShape,
  firstDataFd: number,
): { arguments: string[]; dataFiles: Buffer[] } {
  const dataFiles: Buffer[] = [];
  const dataFd = (content: Buffer | string): string => {
    dataFiles.push(Buffer.isBuffer(content) ? content : Buffer.from(content));
    return String(firstDataFd + dataFiles.length - 1);
  };
  const dataFile = (target: string, content: Buffer | string): string[] => [
    '--perms',
    '0444',
    '--ro-bind-data',
    dataFd(content),
    target,
  ];
  const tmpSize = String(shape.tmpBytes);
  const argumentList = [
    // Explicit namespaces rather than --unshare-all, whose user and cgroup parts are only "try".
    ...['--unshare-user', '--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup'],
    '--disable-userns',
    '--new-session',
    '--die-with-parent',
    ...['--cap-drop', 'ALL'],
    ...['--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID)],
    ...['--hostname', 'sandbox'],
    '--clearenv',
    ...['--setenv', 'PATH', SANDBOX_PATH],
    ...['--setenv', 'HOME', WORKSPACE_MOUNT],
    ...['--setenv', 'LANG', 'C.UTF-8'],
    // One BLAS thread per process: threads count against the workspace's processes, and its CPU
    // quota would not let them run at once anyway (the host's OpenBLAS starts one per CPU).
    ...['--setenv', 'OPENBLAS_NUM_THREADS', '1'],
    ...['--setenv', 'TMPDIR', '/tmp'],
    ...['--setenv', 'PYTHONDONTWRITEBYTECODE', '1'],
    ...['--ro-bind', '/usr', '/usr'],
    ...topLevelArguments(shape.layout),
    ...shape.layout.etc.flatMap((entry) => ['--ro-bind', `/etc/${entry}`, `/etc/${entry}`]),
    ...dataFile('/etc/passwd', PASSWD),
    ...dataFile('/etc/group', GROUP),
    ...dataFile('/etc/hosts', HOSTS),
    ...(shape.helper ? dataFile(HELPER_PATH, shape.helper) : []),
    ...(shape.supervisor ? [...dataFile(SUPERVISOR_PATH, shape.supervisor), '--as-pid-1'] : []),
    ...(shape.seccomp ? ['--seccomp', dataFd(shape.seccomp)] : []),
    ...['--proc', '/proc'],
    ...['--dev', '/dev'],
    ...['--size', tmpSize, '--tmpfs', '/tmp'],
    ...['--size', tmpSize, '--tmpfs', '/dev/shm'],
    ...['--bind', shape.workspaceDirectory, WORKSPACE_MOUNT],
    // bwrap's root and /dev are writable tmpfs without a size limit until made read-only.
    ...['--remount-ro', '/dev'],
    ...['--remount-ro', '/'],
    ...['--chdir', WORKSPACE_MOUNT],
  ];
  return { arguments: argumentList, dataFiles };
}

/** Host credentials the sandbox's bwrap runs with when the service itself is root. */
export interface HostUser {
  uid: number;
  gid: number;
}

/**
 * For a service running as root: the arguments of an outer, staging bwrap, up to the inner
 * bwrap executable that the sandbox's own arguments then follow.
 *
 * Started by root, bwrap would map the sandbox user to host uid 0: without capabilities, but
 * still the owner of every root-owned file (global sysctls in /proc/sys among them) and exempt
 * from RLIMIT_NPROC. So root only stages: in a private mount namespace it binds the workspace at
 * STAGE_MOUNT (the workspace's real parents may be 0700 root, which `user` cannot search), then
 * setpriv drops to `user` with no capabilities and no new privileges, and the sandbox's bwrap
 * runs exactly as it would for an unprivileged service. Only trusted executables (setpriv, bwrap)
 * ever run in the staging namespace.
 */
export function stagingPrefix(
  layout: HostLayout,
  workspaceDirectory: string,
  bwrapPath: string,
  user: HostUser,
): string[] {
  const ownBinary =
    path.isAbsolute(bwrapPath) && !bwrapPath.startsWith('/usr/') ? ['--ro-bind', bwrapPath, bwrapPath] : [];
  return [
    '--die-with-parent',
    ...['--ro-bind', '/usr', '/usr'],
    ...topLevelArguments(layout),
    ...ownBinary,
    ...['--ro-bind', '/etc', '/etc'],
    // The host's /proc, whole: the inner bwrap writes its uid map there, and the kernel lets it
    // mount a fresh procfs only while an existing one is fully visible (so not `--proc`).
    ...['--bind', '/proc', '/proc'],
    ...['--dev-bind', '/dev', '/dev'],
    ...['--tmpfs', '/tmp'],
    ...['--bind', workspaceDirectory, STAGE_MOUNT],
    '--',
    SETPRIV_PATH,
    ...['--reuid', String(user.uid), '--regid', String(user.gid), '--clear-groups'],
    ...['--no-new-privs', '--bounding-set=-all', '--inh-caps=-all'],
    '--',
    bwrapPath,
  ];
}
