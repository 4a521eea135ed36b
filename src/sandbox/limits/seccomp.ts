import { spawn } from 'node:child_process';
import path from 'node:path';
import { packageRoot } from '../../package-root.js';
import { packagedSource } from '../runtime/packaged-source.js';

/** Where the filter builder lives in the package (it also runs inside Docker sandboxes). */
const FILTER_SCRIPT = 'src/sandbox/limits/seccomp-filter.py';

/**
 * Syscalls the sandboxes' seccomp filter refuses with EPERM whatever their arguments, on both
 * backends (bwrap loads it; Docker containers load it into their supervisor, on top of the
 * runtime's own profile). The filter is not built (SeccompUnavailableError) when the installed
 * libseccomp lacks one of them.
 *
 * The filter also holds rules that look at arguments, written in `seccomp-filter.py`: `clone`
 * with any CLONE_NEW* flag and `ioctl` TIOCSTI/TIOCLINUX give EPERM, `personality` gives EPERM
 * for anything but the default persona, `socket`/`socketpair` give EAFNOSUPPORT for any address
 * family but `SOCKET_FAMILIES`, and `clone3` gives ENOSYS so that glibc falls back to `clone`
 * (whose flags a filter can see).
 *
 * @example
 * DENIED_SYSCALLS.includes('ptrace'); // true: inside the sandbox, ptrace fails with EPERM
 */
export const DENIED_SYSCALLS = [
  // Kernel keyrings are shared across the host, not namespaced.
  'keyctl',
  'add_key',
  'request_key',
  // Large kernel interfaces that sandboxed code has no use for and that keep having holes.
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  'kexec_load',
  'kexec_file_load',
  // Opens files by handle, around the mount layout the sandbox is built of.
  'open_by_handle_at',
  // Mounts and namespaces: the sandbox's layout is final once bwrap has executed the command.
  'mount',
  'umount2',
  'pivot_root',
  'unshare',
  'setns',
  // Other processes' memory.
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
] as const;

/**
 * Syscalls also refused with EPERM, but only where the installed libseccomp knows them (some
 * are newer than older libseccomp releases, some exist only on some architectures). Most already
 * fail for lack of a capability; the filter refuses them before the kernel looks any further.
 *
 * @example
 * const denied = [...DENIED_SYSCALLS, ...DENIED_WHERE_KNOWN];
 */
export const DENIED_WHERE_KNOWN = [
  'fsopen',
  'fsmount',
  'fsconfig',
  'move_mount',
  'open_tree',
  'fspick',
  'mount_setattr',
  'quotactl',
  'swapon',
  'swapoff',
  'reboot',
  'init_module',
  'finit_module',
  'delete_module',
  'acct',
  'settimeofday',
  'clock_settime',
  'syslog',
  'name_to_handle_at',
  'lookup_dcookie',
  'vhangup',
  'uselib',
  'nfsservctl',
  'iopl',
  'ioperm',
] as const;

/**
 * The only address families sandboxed code may make sockets of (Linux's numbers, the same on
 * every architecture). Every other one is refused with EAFNOSUPPORT: some are not confined by the
 * network namespace at all (AF_VSOCK reaches the hypervisor's host), and the rest serve nothing a
 * workspace does. AF_NETLINK is left out too: glibc does without it (`getaddrinfo` then assumes
 * both IPv4 and IPv6), and nothing in the sandbox needs to ask the kernel about interfaces.
 */
export const SOCKET_FAMILIES = { AF_UNIX: 1, AF_INET: 2, AF_INET6: 10 } as const;

/**
 * The filter's rules as `seccomp-filter.py` takes them (its RULES argument).
 *
 * @example
 * spawn('python3', ['-I', 'seccomp-filter.py', seccompRules()]);
 */
export function seccompRules(): string {
  return JSON.stringify({
    required: DENIED_SYSCALLS,
    whereKnown: DENIED_WHERE_KNOWN,
    socketFamilies: Object.values(SOCKET_FAMILIES),
  });
}

/**
 * The argv that loads the filter into a new process and then executes `program` under it: for
 * sandboxes whose runtime applies no filter of ours (Docker). Runs `python3` with libseccomp's
 * bindings (python3-seccomp) inside the sandbox; fails, naming what is missing, without them.
 *
 * @example
 * createExec(workspaceId, await underSeccompFilter(['python3', '-I', '-S', '-c', supervisor]));
 */
export async function underSeccompFilter(program: readonly string[]): Promise<string[]> {
  const source = (await packagedSource(FILTER_SCRIPT)).toString('utf8');
  return ['python3', '-I', '-c', source, '--exec', seccompRules(), ...program];
}

/**
 * The seccomp filter cannot be built on this host; the message says what is missing and how to
 * install it. Sandboxes must then be reported unavailable rather than started without it.
 *
 * @example
 * new SeccompUnavailableError('python3-seccomp is not installed (apt-get install python3-seccomp)').message;
 * // 'the seccomp filter could not be built: python3-seccomp is not installed (apt-get install python3-seccomp)'
 */
export class SeccompUnavailableError extends Error {
  constructor(reason: string) {
    super(`the seccomp filter could not be built: ${reason}`);
    this.name = 'SeccompUnavailableError';
  }
}

/**
 * Options of `seccompFilter`.
 *
 * @example
 * await seccompFilter({ python: '/usr/bin/python3' });
 */
export interface SeccompFilterOptions {
  /** The Python that has libseccomp's bindings; Debian's python3-seccomp serves /usr/bin/python3. */
  python?: string;
}

const DEFAULT_PYTHON = '/usr/bin/python3';
/** The kernel refuses classic-BPF programs longer than this many instructions (BPF_MAXINSNS). */
const MAX_INSTRUCTIONS = 4096;
const INSTRUCTION_BYTES = 8;
/** Building takes tens of milliseconds; this only bounds a hung interpreter. */
const BUILD_TIMEOUT_MS = 15_000;
const MAX_STDERR_BYTES = 4096;
const TOO_LONG = `the filter is longer than the kernel's ${MAX_INSTRUCTIONS} instructions`;

const built = new Map<string, Promise<Buffer>>();

/**
 * The compiled filter for bwrap's `--seccomp FD`: a classic-BPF program for this machine's
 * architecture, built once per interpreter by libseccomp (`seccomp-filter.py`) and shared by
 * every later call, so callers must not modify it. A failed build is not remembered: the next
 * call tries again.
 *
 * @throws SeccompUnavailableError when the interpreter or python3-seccomp is missing, or the
 *   build fails.
 * @example
 * try {
 *   const filter = await seccompFilter();
 *   // bwrap … --seccomp 3 …, with `filter` written to the child's fd 3
 * } catch (error) {
 *   if (error instanceof SeccompUnavailableError) reportSandboxesUnavailable(error.message);
 *   else throw error;
 * }
 */
export function seccompFilter(options: SeccompFilterOptions = {}): Promise<Buffer> {
  const python = options.python ?? DEFAULT_PYTHON;
  let filter = built.get(python);
  if (!filter) {
    filter = buildFilter(python).catch((error: unknown) => {
      built.delete(python);
      throw error;
    });
    built.set(python, filter);
  }
  return filter;
}

function spawnFailure(python: string, error: NodeJS.ErrnoException): SeccompUnavailableError {
  if (error.code === 'ENOENT') {
    return new SeccompUnavailableError(`${python} does not exist (apt-get install python3 python3-seccomp)`);
  }
  return new SeccompUnavailableError(`${python} cannot be run (${error.code ?? error.message})`);
}

function checkedProgram(program: Buffer): Buffer {
  if (program.length === 0 || program.length % INSTRUCTION_BYTES !== 0) {
    throw new SeccompUnavailableError(`libseccomp wrote ${program.length} bytes, which is not a BPF program`);
  }
  if (program.length / INSTRUCTION_BYTES > MAX_INSTRUCTIONS) {
    throw new SeccompUnavailableError(TOO_LONG);
  }
  return program;
}

function buildFilter(python: string): Promise<Buffer> {
  const script = path.join(packageRoot(), FILTER_SCRIPT);
  const lists = seccompRules();
  return new Promise((resolve, reject) => {
    // -I: neither PYTHON* variables nor user site-packages decide what the filter is built from.
    // (-S would also hide dist-packages, where Debian installs the seccomp module.) The service's
    // environment is not passed on at all.
    const child = spawn(python, ['-I', script, lists], { cwd: '/', env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let stopped: string | undefined;
    const stop = (why: string) => {
      stopped ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(`${python} did not finish within ${BUILD_TIMEOUT_MS} ms`), BUILD_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      // A program the kernel would refuse anyway is not worth buffering.
      if (stdoutBytes > MAX_INSTRUCTIONS * INSTRUCTION_BYTES) stop(TOO_LONG);
      else stdout.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr += text;
    });
    // A failed spawn emits 'error' and then 'close'; the promise keeps the first outcome.
    child.once('error', (error: NodeJS.ErrnoException) => reject(spawnFailure(python, error)));
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (stopped) return reject(new SeccompUnavailableError(stopped));
      if (code !== 0) {
        // The script's last stderr line is its one-line reason (a crash leaves a traceback).
        const reason = stderr.trim().split('\n').at(-1);
        const status = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        return reject(new SeccompUnavailableError(reason || `${python} ${status}`));
      }
      try {
        resolve(checkedProgram(Buffer.concat(stdout)));
      } catch (error) {
        reject(error);
      }
    });
  });
}
