import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExecOptions,
  type SandboxBackend,
  WorkspaceFileError,
  type WorkspaceFileErrorCode,
} from '../../src/sandbox/backend.js';
import { chunkedStream } from './storage-contract.js';

/** What the contract needs from one backend. */
export interface SandboxBackendUnderTest {
  /** Configured with `SANDBOX_CONTRACT_LIMITS`. */
  backend: SandboxBackend;
  /** Host directory of the workspaces, when the backend keeps them on this machine's disk. */
  workspacesDir?: string;
  cleanup(): Promise<void>;
}

/** The limits every backend under contract is configured with, so the suite can probe them. */
export const SANDBOX_CONTRACT_LIMITS = {
  memoryBytes: 1024 ** 3,
  processes: 128,
  fileSizeBytes: 16 * 1024 ** 2,
  openFiles: 256,
  tmpBytes: 8 * 1024 ** 2,
} as const;

/** Variables a sandboxed shell may see: the backend's fixed set plus what `sh` itself adds. */
const SANDBOX_VARIABLES = new Set([
  'PATH',
  'HOME',
  'LANG',
  'OPENBLAS_NUM_THREADS',
  'TMPDIR',
  'PYTHONDONTWRITEBYTECODE',
  'PWD',
  'OLDPWD',
  'SHLVL',
  '_',
  'HOSTNAME',
  // What the sandbox image defines for its libraries (docker backend).
  'MPLBACKEND',
  'MPLCONFIGDIR',
]);
const MiB = 1024 ** 2;

/**
 * Makes one socket (or socket pair) of each address family and closes it again, printing JSON
 * {label: "OK" | errno name}. Sockets are only created: nothing is ever connected or sent, on
 * AF_VSOCK above all (the host's own agents listen there). `AF_INET|1<<32` passes AF_INET with
 * a high bit set through the raw syscall, which the kernel would read as AF_INET.
 */
export const SOCKET_FAMILIES_PROBE = `
import ctypes, errno, json, platform, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_SOCKET = {"x86_64": 41, "aarch64": 198}[platform.machine()]
FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_VSOCK": 40, "AF_NETLINK": 16, "AF_PACKET": 17,
            "AF_KEY": 15, "AF_ALG": 38, "AF_UNSPEC": 0, "AF_TIPC": 30, "AF_BLUETOOTH": 31, "AF_XDP": 44}
results = {}
def outcome(result):
    if result >= 0:
        libc.close(result)
        return "OK"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
for name, family in FAMILIES.items():
    kind = socket.SOCK_DGRAM if name in ("AF_NETLINK", "AF_PACKET", "AF_KEY") else socket.SOCK_STREAM
    if name == "AF_KEY":
        kind = socket.SOCK_RAW
    results[name] = outcome(libc.socket(family, kind, 0))
pair = (ctypes.c_int * 2)()
for name, family in (("AF_UNIX", 1), ("AF_VSOCK", 40)):
    result = libc.socketpair(family, socket.SOCK_STREAM, 0, pair)
    if result == 0:
        libc.close(pair[0]); libc.close(pair[1])
    results["socketpair " + name] = "OK" if result == 0 else errno.errorcode.get(ctypes.get_errno())
results["AF_INET|1<<32"] = outcome(libc.syscall(ctypes.c_long(SYS_SOCKET), ctypes.c_ulong((1 << 32) | 2), ctypes.c_ulong(socket.SOCK_STREAM), ctypes.c_ulong(0)))
print(json.dumps(results))
`;
/** The symlinks the symlink cases plant in a workspace. */
const PLANTED_LINKS = ['etc-link', 'environ-link', 'dangling', 'root-link', 'dir-link', 'file-link', 'host-link'];

export function newWorkspaceId(): string {
  return `ws_${randomBytes(8).toString('hex')}`;
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

async function refusal(promise: Promise<unknown>): Promise<WorkspaceFileErrorCode> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'expected a WorkspaceFileError').toBeInstanceOf(WorkspaceFileError);
  return (error as WorkspaceFileError).code;
}

/**
 * The one contract every `SandboxBackend` passes, with real sandboxes: exec semantics, isolation
 * (environment, other workspaces, host paths, network, system directories, capabilities),
 * resource limits, killing whole process trees on timeout and abort, output caps applied while
 * streaming, and file operations that refuse every symlink sandboxed code can plant.
 */
export function describeSandboxBackendContract(name: string, setup: () => Promise<SandboxBackendUnderTest>): void {
  describe(`SandboxBackend contract: ${name}`, () => {
    let subject: SandboxBackendUnderTest;
    let backend: SandboxBackend;
    let hostDirectory: string;
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    const workspace = newWorkspaceId();
    const other = newWorkspaceId();

    beforeAll(async () => {
      process.env.MORDN_TEST_SECRET = canary;
      hostDirectory = await mkdtemp(path.join(tmpdir(), 'mordn-contract-host-'));
      subject = await setup();
      backend = subject.backend;
      await backend.ensureWorkspace(workspace);
      await backend.ensureWorkspace(other);
    });
    afterAll(async () => {
      delete process.env.MORDN_TEST_SECRET;
      try {
        await backend?.removeWorkspace(workspace);
        await backend?.removeWorkspace(other);
      } finally {
        await subject?.cleanup();
        await rm(hostDirectory, { recursive: true, force: true });
      }
    });

    const run = (command: string, options: Partial<ExecOptions> = {}, workspaceId = workspace) =>
      backend.exec(workspaceId, { command, timeoutMs: 15_000, maxOutputBytes: MiB, ...options });
    const write = (workspaceId: string, filePath: string, content: string | Buffer, exclusive = false) =>
      backend.writeFile(workspaceId, filePath, Readable.from([Buffer.from(content)]), {
        maxBytes: MiB,
        exclusive,
      });
    const read = async (workspaceId: string, filePath: string, maxBytes = MiB) => {
      const { size, body } = await backend.openFile(workspaceId, filePath, { maxBytes });
      const bytes = await readAll(body);
      expect(bytes.length).toBe(size);
      return bytes;
    };

    describe('exec', () => {
      it('returns stdout, stderr and the exit status of sh -c', async () => {
        const result = await run('echo out; echo err >&2; exit 7');
        expect(result).toMatchObject({
          exitCode: 7,
          stdout: 'out\n',
          stderr: 'err\n',
          truncated: false,
          timedOut: false,
          aborted: false,
        });
        expect(result.durationMs).toBeGreaterThanOrEqual(0);
      });

      it('runs as uid and gid 1000 in /workspace with HOME=/workspace', async () => {
        const result = await run('id -u; id -g; pwd; echo "$HOME"; test -w . && echo writable');
        expect(result.stdout).toBe('1000\n1000\n/workspace\n/workspace\nwritable\n');
      });

      it('passes nothing from the service environment', async () => {
        const result = await run("env; echo ---; tr '\\0' '\\n' < /proc/self/environ; echo ---; cat /proc/1/environ");
        expect(result.stdout).not.toContain(canary);
        expect(result.stdout).not.toContain('MORDN_TEST_SECRET');
        const names = result.stdout
          .split('\n')
          .filter((line) => line.includes('='))
          .map((line) => line.slice(0, line.indexOf('=')));
        expect(names.filter((variable) => !SANDBOX_VARIABLES.has(variable))).toEqual([]);
      });

      it('decodes output as UTF-8, replacing invalid bytes', async () => {
        const result = await run("printf 'h\\303\\251\\377!'");
        expect(result.stdout).toBe('hé\uFFFD!');
      });

      it('hands each stream to onOutput as it is written, past the cap, while keeping the result capped', async () => {
        const seen: Array<{ stream: string; chunk: Buffer; at: number }> = [];
        const started = Date.now();
        const result = await run("echo one; sleep 0.5; echo two >&2; head -c 3000 /dev/zero | tr '\\0' z", {
          maxOutputBytes: 1000,
          onOutput: (stream, chunk) => seen.push({ stream, chunk: Buffer.from(chunk), at: Date.now() - started }),
        });
        const ended = Date.now() - started;
        const streamed = (stream: string) =>
          Buffer.concat(seen.filter((entry) => entry.stream === stream).map((entry) => entry.chunk)).toString();
        expect(streamed('stdout')).toBe(`one\n${'z'.repeat(3000)}`);
        expect(streamed('stderr')).toBe('two\n');
        expect(result).toMatchObject({ stdout: `one\n${'z'.repeat(996)}`, stderr: 'two\n', truncated: true });
        // The first line came while the command still ran, not with its end.
        expect(ended - (seen[0] as { at: number }).at).toBeGreaterThan(300);
      });

      it('keeps files between execs of the same workspace', async () => {
        await run('mkdir -p keep && echo persisted > keep/file.txt');
        expect((await run('cat keep/file.txt')).stdout).toBe('persisted\n');
      });
    });

    describe('isolation', () => {
      it('cannot see another workspace', async () => {
        await write(other, 'other-secret.txt', canary);
        const result = await run(
          `ls -a /workspace; cat other-secret.txt; grep -rl ${canary} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr 2>/dev/null; true`,
        );
        expect(result.stdout).not.toContain('other-secret.txt');
        expect(result.stdout).not.toContain(canary);
        expect(await refusal(backend.openFile(workspace, 'other-secret.txt', { maxBytes: 100 }))).toBe('NOT_FOUND');
      });

      it('cannot see the host data directory, the workspaces directory or the service cwd', async () => {
        const hostPaths = [hostDirectory, process.cwd()];
        if (subject.workspacesDir) hostPaths.push(subject.workspacesDir, path.join(subject.workspacesDir, workspace));
        const checks = hostPaths.map((hostPath) => `test -e '${hostPath}' && echo 'visible: ${hostPath}'`).join('; ');
        const result = await run(`${checks}; true`);
        expect(result.stdout).toBe('');
      });

      it('has no network: a host listener on 127.0.0.1 is never reached, DNS and outbound fail', async () => {
        let connections = 0;
        const server = createServer((socket) => {
          connections += 1;
          socket.destroy();
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const { port } = server.address() as { port: number };
        try {
          const local = await run(`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 1)"`);
          expect(local.exitCode).not.toBe(0);
          const dns = await run(`python3 -c "import socket; socket.getaddrinfo('example.com', 80)"`);
          expect(dns.exitCode).not.toBe(0);
          const outbound = await run(`python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), 2)"`);
          expect(outbound.exitCode).not.toBe(0);
          // Read from /proc: the netlink socket if_nameindex() would use is refused.
          const interfaces = await run(`tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`);
          expect(interfaces.stdout.trim()).toBe('lo');
          expect(connections).toBe(0);
        } finally {
          server.close();
        }
      });

      it('makes sockets of AF_UNIX, AF_INET and AF_INET6 only: AF_VSOCK, AF_NETLINK and every other family are refused', async () => {
        const result = await run(`python3 -c '${SOCKET_FAMILIES_PROBE}'`);
        expect(result.exitCode, result.stderr).toBe(0);
        const families = JSON.parse(result.stdout) as Record<string, string>;
        expect(families).toMatchObject({ AF_UNIX: 'OK', AF_INET: 'OK', AF_INET6: 'OK', 'socketpair AF_UNIX': 'OK' });
        // vsock reaches the hypervisor's host whatever the network namespace: the filter refuses
        // it as a kernel without it would, on every machine alike.
        expect(families.AF_VSOCK).toBe('EAFNOSUPPORT');
        expect(families['socketpair AF_VSOCK']).toBe('EAFNOSUPPORT');
        expect(families['AF_INET|1<<32']).toBe('EAFNOSUPPORT');
        for (const name of [
          'AF_NETLINK',
          'AF_PACKET',
          'AF_KEY',
          'AF_ALG',
          'AF_UNSPEC',
          'AF_TIPC',
          'AF_BLUETOOTH',
          'AF_XDP',
        ]) {
          expect(['EAFNOSUPPORT', 'EPERM'], name).toContain(families[name]);
        }
      });

      it('cannot write system directories', async () => {
        const result = await run(
          'for target in /usr/x /etc/x /bin/x /x; do touch "$target" 2>/dev/null && echo "wrote $target"; done; touch ok && echo workspace-ok',
        );
        expect(result.stdout).toBe('workspace-ok\n');
      });

      it('has no capabilities', async () => {
        const result = await run('grep ^Cap /proc/self/status');
        const capabilities = Object.fromEntries(
          result.stdout
            .trim()
            .split('\n')
            .map((line) => line.split(/:\s+/)),
        );
        for (const set of ['CapInh', 'CapPrm', 'CapEff']) expect(capabilities[set], set).toBe('0000000000000000');
        // gVisor's /proc does not report the bounding and ambient sets; where they are, they are empty.
        for (const set of ['CapBnd', 'CapAmb']) {
          if (set in capabilities) expect(capabilities[set], set).toBe('0000000000000000');
        }
      });

      it('has a writable /tmp capped at its size', async () => {
        const { tmpBytes } = SANDBOX_CONTRACT_LIMITS;
        const result = await run(
          `echo small > /tmp/small && cat /tmp/small; head -c ${tmpBytes + 1} /dev/zero > /tmp/big; echo "status $?"; wc -c < /tmp/big`,
        );
        const [small, status, size] = result.stdout.trim().split('\n');
        expect(small).toBe('small');
        expect(status).not.toBe('status 0');
        expect(Number(size)).toBeLessThanOrEqual(tmpBytes);
      });
    });

    describe('limits', () => {
      it('holds RLIMIT_FSIZE', async () => {
        const { fileSizeBytes } = SANDBOX_CONTRACT_LIMITS;
        const result = await run(
          `head -c ${fileSizeBytes + 1} /dev/zero > big.bin; echo "status $?"; wc -c < big.bin; rm big.bin`,
        );
        const [status, size] = result.stdout.trim().split('\n');
        expect(status).not.toBe('status 0');
        expect(Number(size)).toBeLessThanOrEqual(fileSizeBytes);
      });

      // bwrap needs root for the workspace cgroup that holds this; without it (weak limits) memory is per process.
      it.runIf(process.getuid?.() === 0 || name.startsWith('docker'))(
        'holds the memory limit for all processes together: over it they die (OUT_OF_MEMORY), under it they run',
        async () => {
          const { memoryBytes } = SANDBOX_CONTRACT_LIMITS;
          // Three processes of 40 % of the limit each, every page touched: together 1.2 × the limit.
          const share = Math.floor((memoryBytes * 0.4) / MiB);
          const over = await run(
            `jobs=; for n in 1 2 3; do python3 -c "import time; b = b'x' * (${share} * 1024 * 1024); time.sleep(3)" & jobs="$jobs $!"; done; ` +
              'failed=0; for job in $jobs; do wait $job || failed=$((failed + 1)); done; echo "failed $failed"',
            { timeoutMs: 30_000 },
          );
          expect(Number(over.stdout.trim().split(' ')[1])).toBeGreaterThanOrEqual(1);
          const modest = await run(`python3 -c "print(len(b'x' * ${64 * MiB}))"`);
          expect(modest.stdout).toBe(`${64 * MiB}\n`);
        },
      );

      // The OOM killer must take the hungry process, not the shell waiting for it or another
      // call's: every process of a command becomes its first choice, even one the shell forks at
      // once (which may read its score before the raise reaches it, so it waits, 2 s at most).
      it('gives every process of a command the OOM score 1000, even a child the shell forked at once', async () => {
        const child =
          '( i=0; while read s < /proc/self/oom_score_adj && [ "$s" != 1000 ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done; echo "$s" )';
        const scores = await Promise.all(
          Array.from({ length: 4 }, async () => {
            const seen: string[] = [];
            for (let round = 0; round < 10; round += 1) {
              const result = await run(`${child}; read s < /proc/$$/oom_score_adj; echo "$s"`);
              seen.push(result.stdout);
            }
            return seen;
          }),
        );
        expect(new Set(scores.flat())).toEqual(new Set(['1000\n1000\n']));
      });

      it('contains a fork bomb: it returns at its timeout and other workspaces still run promptly', async () => {
        const started = Date.now();
        const bomb = await run('bomb() { bomb | bomb & }; bomb; exec sleep 60', {
          timeoutMs: 1500,
          maxOutputBytes: 4096,
        });
        // Either the timeout kills it, or the process ceiling makes the shell give up first.
        expect(bomb.timedOut || (bomb.exitCode !== 0 && bomb.exitCode !== null)).toBe(true);
        expect(Date.now() - started).toBeLessThan(1500 + 5000);
        const tick = Date.now();
        await delay(10);
        expect(Date.now() - tick).toBeLessThan(500);
        const next = Date.now();
        const after = await run('echo alive', {}, other);
        expect(after.stdout).toBe('alive\n');
        expect(Date.now() - next).toBeLessThan(3000);
      });
    });

    describe('timeouts and aborts', () => {
      it('kills at the timeout: timedOut, no exit code', async () => {
        const started = Date.now();
        const result = await run('echo started; sleep 60', { timeoutMs: 1000 });
        expect(result).toMatchObject({ exitCode: null, timedOut: true, aborted: false, stdout: 'started\n' });
        expect(Date.now() - started).toBeLessThan(1000 + 3000);
      });

      it('kills within a second of an abort', async () => {
        const controller = new AbortController();
        const abortAt = Date.now() + 300;
        setTimeout(() => controller.abort(), 300);
        const result = await run('sleep 60', { timeoutMs: 20_000, signal: controller.signal });
        expect(result).toMatchObject({ exitCode: null, aborted: true, timedOut: false });
        expect(Date.now() - abortAt).toBeLessThan(1000);
      });

      it('runs nothing for an already aborted signal', async () => {
        const result = await run('touch should-not-exist', { signal: AbortSignal.abort() });
        expect(result).toMatchObject({ exitCode: null, aborted: true });
        expect(await refusal(backend.openFile(workspace, 'should-not-exist', { maxBytes: 10 }))).toBe('NOT_FOUND');
      });

      it('kills detached background children (setsid, nohup) with the timed-out command', async () => {
        const result = await run(
          "setsid sh -c 'while :; do echo x >> marker-a; sleep 0.1; done' >/dev/null 2>&1 & " +
            "nohup sh -c 'while :; do echo y >> marker-b; sleep 0.1; done' >/dev/null 2>&1 & sleep 60",
          { timeoutMs: 1000 },
        );
        expect(result.timedOut).toBe(true);
        const sizes = async () => (await run('wc -c < marker-a; wc -c < marker-b')).stdout;
        const first = await sizes();
        expect(
          first
            .trim()
            .split('\n')
            .map(Number)
            .every((size) => size > 0),
        ).toBe(true);
        await delay(600);
        expect(await sizes()).toBe(first);
      });

      it('caps stdout and stderr while streaming, and keeps reading until the timeout', async () => {
        const cap = 64 * 1024;
        // Two `yes` push over a GiB a second through the pipes; the capture keeps only the cap
        // (see output-capture.test.ts) and never stops reading, so the command runs to its timeout.
        const result = await run('yes & yes >&2', { timeoutMs: 1500, maxOutputBytes: cap });
        expect(result).toMatchObject({ truncated: true, timedOut: true, exitCode: null });
        expect(result.stdout).toBe('y\n'.repeat(cap / 2));
        expect(result.stderr).toBe('y\n'.repeat(cap / 2));
      });
    });

    describe('files', () => {
      it('writes, reads and lists, creating parent directories', async () => {
        expect(await write(workspace, 'docs/2024/notes.txt', 'héllo\n')).toEqual({ size: 7 });
        expect((await read(workspace, 'docs/2024/notes.txt')).toString()).toBe('héllo\n');
        expect(await backend.listFiles(workspace, 'docs', { maxEntries: 10 })).toEqual({
          entries: [{ name: '2024', type: 'directory', size: 0 }],
          truncated: false,
        });
        expect(await backend.listFiles(workspace, 'docs/2024', { maxEntries: 10 })).toEqual({
          entries: [{ name: 'notes.txt', type: 'file', size: 7 }],
          truncated: false,
        });
        expect((await run('cat docs/2024/notes.txt')).stdout).toBe('héllo\n');
        const root = await backend.listFiles(workspace, '.', { maxEntries: 1000 });
        expect(root.entries).toContainEqual({ name: 'docs', type: 'directory', size: 0 });
      });

      it('streams a 3 MiB binary file in and out unchanged', async () => {
        const bytes = randomBytes(3 * MiB);
        const { size } = await backend.writeFile(workspace, 'blob.bin', chunkedStream(bytes), { maxBytes: 4 * MiB });
        expect(size).toBe(bytes.length);
        const { size: readSize, body } = await backend.openFile(workspace, 'blob.bin', { maxBytes: 4 * MiB });
        expect(readSize).toBe(bytes.length);
        expect((await readAll(body)).equals(bytes)).toBe(true);
      });

      it('replaces an existing file, and an exclusive write refuses it (EXISTS)', async () => {
        await write(workspace, 'replace.txt', 'a much longer first version');
        await write(workspace, 'replace.txt', 'short');
        expect((await read(workspace, 'replace.txt')).toString()).toBe('short');
        expect(await refusal(write(workspace, 'replace.txt', 'other', true))).toBe('EXISTS');
        expect((await read(workspace, 'replace.txt')).toString()).toBe('short');
        await write(workspace, 'exclusive.txt', 'new', true);
        expect((await read(workspace, 'exclusive.txt')).toString()).toBe('new');
      });

      it('refuses to read a file over maxBytes before streaming (TOO_LARGE)', async () => {
        await write(workspace, 'thousand.bin', Buffer.alloc(1000, 1));
        expect(await refusal(backend.openFile(workspace, 'thousand.bin', { maxBytes: 999 }))).toBe('TOO_LARGE');
        expect((await read(workspace, 'thousand.bin', 1000)).length).toBe(1000);
      });

      it('refuses a write over maxBytes, stops reading the body and keeps no file', async () => {
        const over = backend.writeFile(workspace, 'over.bin', chunkedStream(Buffer.alloc(2000, 2), 500), {
          maxBytes: 1000,
        });
        expect(await refusal(over)).toBe('TOO_LARGE');
        expect(await refusal(backend.openFile(workspace, 'over.bin', { maxBytes: MiB }))).toBe('NOT_FOUND');

        let produced = 0;
        const endless = Readable.from(
          (async function* () {
            for (;;) {
              produced += 64 * 1024;
              yield Buffer.alloc(64 * 1024);
            }
          })(),
        );
        expect(await refusal(backend.writeFile(workspace, 'endless.bin', endless, { maxBytes: MiB }))).toBe(
          'TOO_LARGE',
        );
        expect(produced).toBeLessThan(2 * MiB);
        expect(endless.destroyed).toBe(true);
        expect(await refusal(backend.openFile(workspace, 'endless.bin', { maxBytes: MiB }))).toBe('NOT_FOUND');
      });

      it('rethrows an error of the body itself and keeps no file', async () => {
        const failure = new Error('client went away');
        const body = chunkedStream(Buffer.alloc(512 * 1024), 64 * 1024, { bytes: 256 * 1024, error: failure });
        await expect(backend.writeFile(workspace, 'broken.bin', body, { maxBytes: MiB })).rejects.toBe(failure);
        expect(await refusal(backend.openFile(workspace, 'broken.bin', { maxBytes: MiB }))).toBe('NOT_FOUND');
      });

      it('reports NOT_FOUND, NOT_A_FILE and NOT_A_DIRECTORY', async () => {
        await write(workspace, 'kinds/file.txt', 'x');
        expect(await refusal(backend.openFile(workspace, 'kinds/missing', { maxBytes: 10 }))).toBe('NOT_FOUND');
        expect(await refusal(backend.listFiles(workspace, 'kinds/missing', { maxEntries: 10 }))).toBe('NOT_FOUND');
        expect(await refusal(backend.openFile(workspace, 'kinds', { maxBytes: 10 }))).toBe('NOT_A_FILE');
        expect(await refusal(write(workspace, 'kinds', 'x'))).toBe('NOT_A_FILE');
        expect(await refusal(backend.listFiles(workspace, 'kinds/file.txt', { maxEntries: 10 }))).toBe(
          'NOT_A_DIRECTORY',
        );
        expect(await refusal(write(workspace, 'kinds/file.txt/below', 'x'))).toBe('NOT_A_DIRECTORY');
      });

      it('refuses FIFOs for reading and writing without hanging', async () => {
        await run('mkfifo fifo');
        expect(await refusal(backend.openFile(workspace, 'fifo', { maxBytes: 10 }))).toBe('NOT_A_FILE');
        expect(await refusal(write(workspace, 'fifo', 'x'))).toBe('NOT_A_FILE');
        const listing = await backend.listFiles(workspace, '.', { maxEntries: 1000 });
        expect(listing.entries).toContainEqual({ name: 'fifo', type: 'other', size: 0 });
      });

      it('honours maxEntries', async () => {
        await run('mkdir many && cd many && touch a b c d e f g h i j');
        const listing = await backend.listFiles(workspace, 'many', { maxEntries: 3 });
        expect(listing.entries).toHaveLength(3);
        expect(listing.truncated).toBe(true);
        expect((await backend.listFiles(workspace, 'many', { maxEntries: 10 })).truncated).toBe(false);
      });

      describe('refuses invalid paths (INVALID_PATH)', () => {
        const cases: Array<[string, string]> = [
          ['a parent reference', '../x'],
          ['an absolute path', '/etc/passwd'],
          ['a traversal behind a directory', 'a/../../b'],
          ['a "." component', 'a/./b'],
          ['a NUL byte', 'a\0b'],
          ['a control character', 'a\nb'],
          ['an empty path', ''],
          ['an empty component', 'a//b'],
          ['a trailing slash', 'a/'],
          ['a sibling workspace sharing a prefix', `../${workspace}-sibling/secret`],
          ['an overlong path', 'a/'.repeat(2100)],
        ];
        it.each(cases)('%s', async (_case, filePath) => {
          let bodyRead = false;
          const body = new Readable({
            read() {
              bodyRead = true;
              this.push(null);
            },
          });
          expect(await refusal(backend.openFile(workspace, filePath, { maxBytes: 10 }))).toBe('INVALID_PATH');
          expect(await refusal(backend.writeFile(workspace, filePath, body, { maxBytes: 10 }))).toBe('INVALID_PATH');
          if (filePath !== '') {
            expect(await refusal(backend.listFiles(workspace, filePath, { maxEntries: 10 }))).toBe('INVALID_PATH');
          }
          expect(bodyRead).toBe(false);
        });
      });

      describe('symlinks planted by sandboxed code', () => {
        const links = newWorkspaceId();
        const danglingTarget = path.join(tmpdir(), `mordn-dangling-${randomBytes(8).toString('hex')}`);
        const throughRoot = `mordn-through-root-${randomBytes(8).toString('hex')}`;
        let hostCanary: string;

        beforeAll(async () => {
          hostCanary = path.join(hostDirectory, 'host-canary.txt');
          await writeFile(hostCanary, 'host canary\n');
          await backend.ensureWorkspace(links);
          const planted = await run(
            [
              'mkdir real && echo inside > real/target.txt',
              'ln -s /etc etc-link',
              'ln -s /proc/self/environ environ-link',
              `ln -s '${danglingTarget}' dangling`,
              'ln -s / root-link',
              'ln -s real dir-link',
              'ln -s real/target.txt file-link',
              `ln -s '${hostCanary}' host-link`,
            ].join(' && '),
            {},
            links,
          );
          expect(planted.exitCode).toBe(0);
        });
        afterAll(() => backend.removeWorkspace(links));

        const readCases = [
          'etc-link/passwd',
          'environ-link',
          'dangling',
          'root-link/etc/passwd',
          'dir-link/target.txt',
          'file-link',
          'host-link',
        ];
        it.each(readCases)('refuses to read %s (SYMLINK)', async (filePath) => {
          expect(await refusal(backend.openFile(links, filePath, { maxBytes: MiB }))).toBe('SYMLINK');
        });

        const writeCases = [...readCases, `root-link/tmp/${throughRoot}`, 'dir-link/new.txt', 'etc-link/new'];
        it.each(writeCases)('refuses to write %s (SYMLINK), exclusive or not', async (filePath) => {
          expect(await refusal(write(links, filePath, 'overwritten'))).toBe('SYMLINK');
          expect(await refusal(write(links, filePath, 'overwritten', true))).toBe('SYMLINK');
        });

        it('changed nothing through them, in the workspace or on the host', async () => {
          expect((await run('cat real/target.txt; ls real', {}, links)).stdout).toBe('inside\ntarget.txt\n');
          expect(existsSync(danglingTarget)).toBe(false);
          expect(existsSync(path.join('/tmp', throughRoot))).toBe(false);
          expect(await readFile(hostCanary, 'utf8')).toBe('host canary\n');
          if (subject.workspacesDir) {
            const root = path.join(subject.workspacesDir, links);
            for (const link of PLANTED_LINKS) {
              expect((await lstat(path.join(root, link))).isSymbolicLink(), link).toBe(true);
            }
          }
        });

        it.each(['etc-link', 'dir-link', 'root-link', 'root-link/etc'])(
          'refuses to list %s (SYMLINK)',
          async (filePath) => {
            expect(await refusal(backend.listFiles(links, filePath, { maxEntries: 100 }))).toBe('SYMLINK');
          },
        );

        it('lists symlinks as symlinks without following them', async () => {
          const { entries } = await backend.listFiles(links, '', { maxEntries: 100 });
          for (const link of PLANTED_LINKS) {
            expect(entries).toContainEqual({ name: link, type: 'symlink', size: 0 });
          }
          expect(entries).toContainEqual({ name: 'real', type: 'directory', size: 0 });
        });

        it('never follows a symlink swapped in while a file operation walks the path', async () => {
          const stopSwapping = new AbortController();
          // `race` keeps flipping between a real directory and a symlink to /etc.
          const swapper = run(
            'mkdir race-real && echo inside > race-real/passwd; while :; do ' +
              'mv -T race-real race; mv -T race race-real; ln -s /etc race; rm -rf race; done 2>/dev/null',
            { timeoutMs: 10_000, signal: stopSwapping.signal },
            links,
          );
          await delay(200);
          const outcomes = new Set<string>();
          const outcome = (error: unknown) => (error instanceof WorkspaceFileError ? error.code : String(error));
          for (let attempt = 0; attempt < 12; attempt += 1) {
            const reading = backend
              .openFile(links, 'race/passwd', { maxBytes: MiB })
              .then(async ({ body }) => (await readAll(body)).toString(), outcome);
            const writing = write(links, 'race/new', 'x').then(() => 'written', outcome);
            for (const result of await Promise.all([reading, writing])) outcomes.add(result);
          }
          stopSwapping.abort();
          expect((await swapper).aborted).toBe(true);
          // NOT_A_DIRECTORY: the link was already swapped back when the refusal was classified.
          for (const result of outcomes)
            expect(['inside\n', 'written', 'SYMLINK', 'NOT_FOUND', 'NOT_A_DIRECTORY']).toContain(result);
        });
      });
    });

    describe('workspaces', () => {
      it('ensureWorkspace is idempotent and keeps the files', async () => {
        await write(workspace, 'still-here.txt', 'yes');
        await backend.ensureWorkspace(workspace);
        expect((await read(workspace, 'still-here.txt')).toString()).toBe('yes');
      });

      it('usage counts what the files take, without following symlinks', async () => {
        const measured = newWorkspaceId();
        await backend.ensureWorkspace(measured);
        try {
          // A filesystem of its own counts allocated blocks (directories too); a plain directory
          // sums file sizes. Either way a symlink to a big host file adds nothing.
          const empty = (await backend.usage(measured)).bytes;
          expect(empty).toBeLessThanOrEqual(64 * 1024);
          await write(measured, 'a.bin', Buffer.alloc(100));
          await write(measured, 'nested/deeper/b.bin', Buffer.alloc(250 * 1024));
          await run(
            'ln -s /usr/bin/python3 big-link; ln -s a.bin a-link; ln -s nested nested-link; mkfifo fifo',
            {},
            measured,
          );
          const used = (await backend.usage(measured)).bytes - empty;
          expect(used).toBeGreaterThanOrEqual(250 * 1024 + 100);
          expect(used).toBeLessThan(250 * 1024 + 100 + 64 * 1024);
        } finally {
          await backend.removeWorkspace(measured);
        }
      });

      it('removeWorkspace deletes everything, follows no symlink, and is idempotent', async () => {
        const doomed = newWorkspaceId();
        const hostTarget = path.join(hostDirectory, 'keep-me');
        await writeFile(hostTarget, 'keep\n');
        await backend.ensureWorkspace(doomed);
        await run(
          `mkdir -p a/b/c && echo x > a/b/c/f && ln -s '${hostDirectory}' host-dir && ln -s / root && chmod 000 a/b`,
          {},
          doomed,
        );
        await backend.removeWorkspace(doomed);
        await backend.removeWorkspace(doomed);
        expect(await readFile(hostTarget, 'utf8')).toBe('keep\n');
        if (subject.workspacesDir) expect(existsSync(path.join(subject.workspacesDir, doomed))).toBe(false);
        await backend.ensureWorkspace(doomed);
        expect(await backend.listFiles(doomed, '.', { maxEntries: 10 })).toEqual({ entries: [], truncated: false });
        await backend.removeWorkspace(doomed);
      });
    });
  });
}
