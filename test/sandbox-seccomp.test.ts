import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { DENIED_SYSCALLS, DENIED_WHERE_KNOWN, seccompFilter } from '../src/sandbox/limits/seccomp.js';

const hasBwrap = (process.env.PATH ?? '')
  .split(':')
  .some((directory) => directory !== '' && existsSync(path.join(directory, 'bwrap')));
const isRoot = process.getuid?.() === 0;
/** As the product does when it is root (see `stagingPrefix`): bwrap never runs as host uid 0. */
const UNPRIVILEGED = { uid: 65534, gid: 65534 };
const SANDBOX_TIMEOUT_MS = 60_000;

/**
 * `/bin`, `/lib`, … as on the host (symlinks into /usr on merged-/usr systems, directories
 * elsewhere), the /etc entries the dynamic loader needs to find libblas and the like, and the
 * one Debian's matplotlib reads its defaults from.
 */
function hostLayoutArguments(): string[] {
  const topLevel = ['/bin', '/sbin', '/lib', '/lib64'].filter((entry) => existsSync(entry));
  const etc = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/matplotlibrc'].filter((entry) => existsSync(entry));
  return [
    ...topLevel.flatMap((entry) =>
      lstatSync(entry).isSymbolicLink() ? ['--symlink', readlinkSync(entry), entry] : ['--ro-bind', entry, entry],
    ),
    ...etc.flatMap((entry) => ['--ro-bind', entry, entry]),
  ];
}

interface SandboxResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `python3 -c code` in a minimal sandbox shaped like the product's, with `filter` loaded from fd 3 if given. */
function runInSandbox(code: string, codeArguments: string[], filter: Buffer | undefined): Promise<SandboxResult> {
  const bwrapArguments = [
    ...['--unshare-user', '--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup'],
    '--disable-userns',
    '--new-session',
    '--die-with-parent',
    ...['--cap-drop', 'ALL'],
    ...['--uid', '1000', '--gid', '1000'],
    '--clearenv',
    ...['--setenv', 'PATH', '/usr/bin:/bin'],
    ...['--setenv', 'HOME', '/tmp'],
    ...['--setenv', 'LANG', 'C.UTF-8'],
    ...['--setenv', 'MPLCONFIGDIR', '/tmp/mpl'],
    ...['--ro-bind', '/usr', '/usr'],
    ...hostLayoutArguments(),
    ...['--proc', '/proc'],
    ...['--dev', '/dev'],
    ...['--tmpfs', '/tmp'],
    ...['--chdir', '/tmp'],
    ...(filter ? ['--seccomp', '3'] : []),
    '--',
    ...['python3', '-c', code, ...codeArguments],
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', bwrapArguments, {
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe', filter ? 'pipe' : 'ignore'],
      ...(isRoot ? UNPRIVILEGED : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    if (filter) (child.stdio[3] as Writable).end(filter);
    child.once('error', reject);
    child.once('close', (exitCode) => resolve({ exitCode, stdout, stderr }));
  });
}

/**
 * Calls each syscall through ctypes with harmless arguments (null pointers, fd 0 on /dev/null,
 * pid 0, which names no process) and prints one JSON object: call → "OK" or the errno's name.
 * Syscall numbers come from libseccomp's own table, so the probe fits any architecture.
 */
const PROBE = `
import ctypes, errno, json, os, sys
import seccomp

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
WORD = (1 << 64) - 1
SIGCHLD = 17
PTRACE_PEEKDATA = 2
WALL = 0x40000000  # __WALL: also children whose exit signal is not SIGCHLD
CLONE_NEW = {"NEWTIME": 0x80, "NEWNS": 0x20000, "NEWCGROUP": 0x2000000, "NEWUTS": 0x4000000,
             "NEWIPC": 0x8000000, "NEWUSER": 0x10000000, "NEWPID": 0x20000000, "NEWNET": 0x40000000}
IOCTLS = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C, "TIOCSTI|1<<32": (1 << 32) | 0x5412, "TCGETS": 0x5401}
PERSONAS = {"QUERY": 0xFFFFFFFF, "ADDR_NO_RANDOMIZE": 0x40000, "READ_IMPLIES_EXEC|1<<32": (1 << 32) | 0x400000,
            "1<<32": 1 << 32, "PER_LINUX": 0}
results = {}

def call(label, name, *arguments):
    number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
    if number < 0:
        results[label] = "UNKNOWN"
        return
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_ulong(value & WORD) for value in arguments))
    if result == 0 and name == "clone":
        os._exit(0)  # the child of a clone that went through
    if result > 0 and name == "clone":
        os.waitpid(result, WALL)
    error = ctypes.get_errno() if result == -1 else 0
    results[label] = errno.errorcode.get(error, str(error)) if error else "OK"

for name in json.loads(sys.argv[1]):
    call(name, name, *((PTRACE_PEEKDATA, 0, 0, 0) if name == "ptrace" else (0, 0, 0, 0, 0, 0)))
call("clone3", "clone3", 0, 0)
for flag, bit in CLONE_NEW.items():
    call("clone(CLONE_" + flag + "|SIGCHLD)", "clone", bit | SIGCHLD, 0, 0, 0, 0)
character = ctypes.create_string_buffer(b"x")
for request, value in IOCTLS.items():
    call("ioctl(0, " + request + ")", "ioctl", 0, value, ctypes.addressof(character))
for persona, value in PERSONAS.items():
    call("personality(" + persona + ")", "personality", value)
# Sockets are only made and closed again: nothing is ever connected or sent.
SOCK_STREAM, SOCK_DGRAM = 1, 2
for family, number, kind in (("AF_UNIX", 1, SOCK_STREAM), ("AF_INET", 2, SOCK_STREAM), ("AF_INET6", 10, SOCK_STREAM),
                             ("AF_NETLINK", 16, SOCK_DGRAM), ("AF_VSOCK", 40, SOCK_STREAM), ("AF_UNSPEC", 0, SOCK_STREAM),
                             ("AF_INET|1<<32", (1 << 32) | 2, SOCK_STREAM), ("AF_INET6|1<<63", (1 << 63) | 10, SOCK_STREAM)):
    ctypes.set_errno(0)
    fd = libc.syscall(ctypes.c_long(seccomp.resolve_syscall(seccomp.Arch.NATIVE, "socket")), ctypes.c_ulong(number), ctypes.c_ulong(kind), ctypes.c_ulong(0))
    if fd >= 0:
        os.close(fd)
    results["socket(" + family + ")"] = "OK" if fd >= 0 else errno.errorcode.get(ctypes.get_errno())
pair = (ctypes.c_int * 2)()
for family, number in (("AF_UNIX", 1), ("AF_NETLINK", 16)):
    ctypes.set_errno(0)
    done = libc.syscall(ctypes.c_long(seccomp.resolve_syscall(seccomp.Arch.NATIVE, "socketpair")), ctypes.c_ulong(number), ctypes.c_ulong(SOCK_DGRAM), ctypes.c_ulong(0), pair)
    if done == 0:
        os.close(pair[0])
        os.close(pair[1])
    results["socketpair(" + family + ")"] = "OK" if done == 0 else errno.errorcode.get(ctypes.get_errno())
print(json.dumps(results))
`;

/** What sandboxed code does every day: threads, fork, a shell, and the office and plotting libraries. */
const WORKLOAD = `
import json, os, subprocess, threading
results = {}
ran = []
thread = threading.Thread(target=lambda: ran.append(True))
thread.start()
thread.join()
results["thread"] = ran == [True]
pid = os.fork()
if pid == 0:
    os._exit(7)
results["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
results["shell"] = subprocess.run(["sh", "-c", "echo hi"], capture_output=True, text=True).stdout
import pandas
pandas.DataFrame({"name": ["a", "b"], "value": [1, 2]}).to_excel("/tmp/table.xlsx", index=False)
results["xlsx"] = pandas.read_excel("/tmp/table.xlsx").to_dict("list")
import docx
document = docx.Document()
document.add_paragraph("hello")
document.save("/tmp/note.docx")
results["docx"] = [paragraph.text for paragraph in docx.Document("/tmp/note.docx").paragraphs]
import pypdf
writer = pypdf.PdfWriter()
writer.add_blank_page(width=72, height=72)
writer.write("/tmp/blank.pdf")
results["pdf_pages"] = len(pypdf.PdfReader("/tmp/blank.pdf").pages)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as pyplot
pyplot.plot([1, 2], [3, 4])
pyplot.savefig("/tmp/plot.png")
with open("/tmp/plot.png", "rb") as png:
    results["png_signature"] = png.read(8).hex()
print(json.dumps(results))
`;

async function probe(filter: Buffer | undefined): Promise<Record<string, string>> {
  const names = [...DENIED_SYSCALLS, ...DENIED_WHERE_KNOWN];
  const result = await runInSandbox(PROBE, [JSON.stringify(names)], filter);
  expect(result, result.stderr).toMatchObject({ exitCode: 0 });
  return JSON.parse(result.stdout) as Record<string, string>;
}

describe.skipIf(!hasBwrap)('the bwrap seccomp filter', () => {
  let filter: Buffer;
  let filtered: Record<string, string>;
  let unfiltered: Record<string, string>;

  beforeAll(async () => {
    filter = await seccompFilter();
    [filtered, unfiltered] = await Promise.all([probe(filter), probe(undefined)]);
  }, SANDBOX_TIMEOUT_MS);

  it('refuses every denied syscall with EPERM', () => {
    for (const name of DENIED_SYSCALLS) expect({ [name]: filtered[name] }).toEqual({ [name]: 'EPERM' });
    // Names the installed libseccomp does not know are left out of the filter and of this probe alike.
    for (const name of DENIED_WHERE_KNOWN) expect(['EPERM', 'UNKNOWN']).toContain(filtered[name]);
  });

  it('refuses new namespaces through clone, and clone3 as not implemented', () => {
    expect(filtered.clone3).toBe('ENOSYS');
    for (const [call, errno] of Object.entries(filtered)) {
      if (call.startsWith('clone(')) expect({ [call]: errno }).toEqual({ [call]: 'EPERM' });
    }
    expect(filtered['clone(CLONE_NEWUSER|SIGCHLD)']).toBe('EPERM');
  });

  it('refuses terminal injection through ioctl, high request bits or not, and leaves other requests alone', () => {
    expect(filtered['ioctl(0, TIOCSTI)']).toBe('EPERM');
    expect(filtered['ioctl(0, TIOCLINUX)']).toBe('EPERM');
    expect(filtered['ioctl(0, TIOCSTI|1<<32)']).toBe('EPERM');
    // fd 0 is /dev/null: not a terminal, which only the kernel can say.
    expect(filtered['ioctl(0, TCGETS)']).toBe('ENOTTY');
  });

  it('allows only the default persona', () => {
    expect(filtered['personality(QUERY)']).toBe('OK');
    expect(filtered['personality(PER_LINUX)']).toBe('OK');
    // The kernel reads 32 bits, so this is PER_LINUX again.
    expect(filtered['personality(1<<32)']).toBe('OK');
    expect(filtered['personality(ADDR_NO_RANDOMIZE)']).toBe('EPERM');
    expect(filtered['personality(READ_IMPLIES_EXEC|1<<32)']).toBe('EPERM');
  });

  it('makes sockets of AF_UNIX, AF_INET and AF_INET6 only, refusing every other family with EAFNOSUPPORT', () => {
    for (const family of ['AF_UNIX', 'AF_INET', 'AF_INET6']) expect(filtered[`socket(${family})`], family).toBe('OK');
    expect(filtered['socketpair(AF_UNIX)']).toBe('OK');
    for (const call of [
      'socket(AF_NETLINK)',
      'socket(AF_VSOCK)',
      'socket(AF_UNSPEC)',
      'socket(AF_INET|1<<32)',
      'socket(AF_INET6|1<<63)',
      'socketpair(AF_NETLINK)',
    ]) {
      expect({ [call]: filtered[call] }).toEqual({ [call]: 'EAFNOSUPPORT' });
    }
  });

  it('is what refuses them: without it the same calls reach the kernel', () => {
    // The kernel reads the family as 32 bits: a high bit set is AF_INET to it.
    expect(unfiltered['socket(AF_INET|1<<32)']).toBe('OK');
    expect(unfiltered['socket(AF_NETLINK)']).toBe('OK');
    expect(unfiltered.unshare).toBe('OK');
    expect(unfiltered.clone3).toBe('EINVAL');
    expect(unfiltered['ioctl(0, TIOCSTI)']).toBe('ENOTTY');
    expect(unfiltered['personality(ADDR_NO_RANDOMIZE)']).toBe('OK');
    expect(unfiltered.keyctl).not.toBe('EPERM');
  });

  it(
    'keeps threads, fork, a shell and the document and plotting libraries working',
    async () => {
      const result = await runInSandbox(WORKLOAD, [], filter);
      expect(result, result.stderr).toMatchObject({ exitCode: 0 });
      expect(JSON.parse(result.stdout)).toEqual({
        thread: true,
        fork: 7,
        shell: 'hi\n',
        xlsx: { name: ['a', 'b'], value: [1, 2] },
        docx: ['hello'],
        pdf_pages: 1,
        png_signature: '89504e470d0a1a0a',
      });
    },
    SANDBOX_TIMEOUT_MS,
  );
});
