import { type ChildProcess, spawn } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { observeStreamErrors } from '../../stream-errors.js';
import type { SandboxExit, SandboxProcess } from '../runtime/sandbox-process.js';
import { type HostUser, type SandboxShape, STAGE_MOUNT, sandboxArguments, stagingPrefix } from './bwrap-arguments.js';

export type { SandboxExit, SandboxProcess } from '../runtime/sandbox-process.js';
export type { HostUser } from './bwrap-arguments.js';

/** How to start one sandbox. */
export interface LaunchOptions {
  bwrapPath: string;
  shape: SandboxShape;
  /** What runs inside, after `--` (already wrapped in its resource limits). */
  command: readonly string[];
  /** Whether the caller writes to the command's stdin (otherwise it reads /dev/null). */
  stdin: boolean;
  /** When the service is root: stage the sandbox and run its bwrap as this user (see `stagingPrefix`). */
  hostUser?: HostUser;
  /** The workspace's cgroup: the sandbox's first process is placed in it before it runs anything. */
  cgroup?: { add(pid: number): Promise<void> };
  /** Runs bwrap and all it starts at this nice value (`nice -n`), e.g. 19 for work off the request path. */
  niceness?: number;
}

/** A started sandbox, with the host pid of its first process (the supervisor, as PID 1). */
export interface LaunchedSandbox extends SandboxProcess {
  readonly childPid: number | undefined;
}

/** bwrap's status fd carries two small JSON lines; anything longer is not bwrap talking. */
const MAX_STATUS_BYTES = 64 * 1024;
/** After a kill, how long to wait for the pipes to close before closing our ends. */
const CLOSE_GRACE_MS = 5_000;

interface StatusReader {
  /** The PID (host view) of bwrap's child inside the namespaces, once reported. */
  childPid: Promise<number | undefined>;
  /** The command's exit status; present only when bwrap finished setup and started it. */
  exitCode(): number | undefined;
}

function readStatus(stream: Readable): StatusReader {
  let buffered = '';
  let exitCode: number | undefined;
  let resolveChild: (pid: number | undefined) => void = () => undefined;
  const childPid = new Promise<number | undefined>((resolve) => {
    resolveChild = resolve;
  });
  stream.setEncoding('utf8');
  stream.on('data', (text: string) => {
    if (buffered.length > MAX_STATUS_BYTES) return;
    buffered += text;
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      try {
        const status = JSON.parse(line) as { 'child-pid'?: unknown; 'exit-code'?: unknown };
        if (typeof status['child-pid'] === 'number') resolveChild(status['child-pid']);
        if (typeof status['exit-code'] === 'number') exitCode = status['exit-code'];
      } catch {
        // Not a status line; ignore it.
      }
    }
  });
  stream.on('close', () => resolveChild(undefined));
  stream.on('error', () => resolveChild(undefined));
  return { childPid, exitCode: () => exitCode };
}

/** Resolves once the child runs, rejects when it could not be executed (ENOENT, EACCES, …). */
function spawned(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const onSpawn = () => {
      child.off('error', onError);
      resolve();
    };
    const onError = (error: Error) => {
      child.off('spawn', onSpawn);
      reject(error);
    };
    child.once('spawn', onSpawn);
    child.once('error', onError);
  });
}

/**
 * Starts one bwrap sandbox (behind the staging bwrap when `hostUser` is set). bwrap gets a
 * near-empty environment (only `PATH`, to find it) and its own process group (`detached`), so it
 * can be killed as a whole. When a pids cgroup is available, the sandbox is held (`--block-fd`)
 * until bwrap and the sandbox's init are in the cgroup, so nothing the command forks can be born
 * outside it.
 *
 * @throws when bwrap cannot be executed (the error's `code` is `ENOENT`, `EACCES`, …).
 */
export async function launchSandbox(options: LaunchOptions): Promise<LaunchedSandbox> {
  const firstDataFd = 3;
  const { hostUser, shape } = options;
  const staging = hostUser ? stagingPrefix(shape.layout, shape.workspaceDirectory, options.bwrapPath, hostUser) : [];
  const { arguments: shapeArguments, dataFiles } = sandboxArguments(
    hostUser ? { ...shape, workspaceDirectory: STAGE_MOUNT } : shape,
    firstDataFd,
  );
  const statusFd = firstDataFd + dataFiles.length;
  const blockFd = statusFd + 1;
  const { cgroup } = options;

  const argumentList = [
    ...staging,
    ...shapeArguments,
    ...['--json-status-fd', String(statusFd)],
    ...(cgroup ? ['--block-fd', String(blockFd)] : []),
    '--',
    ...options.command,
  ];
  const [executable, ...commandLine] =
    options.niceness === undefined
      ? [options.bwrapPath, ...argumentList]
      : ['nice', '-n', String(options.niceness), options.bwrapPath, ...argumentList];
  const child: ChildProcess = spawn(executable as string, commandLine, {
    cwd: '/',
    detached: true,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: [
      options.stdin ? 'pipe' : 'ignore',
      'pipe',
      'pipe',
      ...dataFiles.map(() => 'pipe' as const),
      'pipe',
      ...(cgroup ? ['pipe' as const] : []),
    ],
  });
  // Errors after start (a pipe closed early, say) surface through 'close'; never as a crash.
  child.on('error', () => undefined);
  for (const stream of child.stdio) if (stream) observeStreamErrors(stream);
  const status = readStatus(child.stdio[statusFd] as Readable);
  // Taken over at once: Node resumes (and so drops) stdio nobody listens to when the child exits,
  // which can happen before the caller gets to read (bwrap failing while we place it, say).
  const stdout = observeStreamErrors((child.stdout as Readable).pipe(new PassThrough()));
  const stderr = observeStreamErrors((child.stderr as Readable).pipe(new PassThrough()));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let exited = false;
  let killed = false;
  child.once('exit', () => {
    exited = true;
  });

  const kill = () => {
    if (exited) return;
    killed = true;
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };

  let childPid: number | undefined;
  try {
    await spawned(child);
    dataFiles.forEach((data, index) => {
      (child.stdio[firstDataFd + index] as Writable).end(data);
    });
    if (cgroup) {
      childPid = await status.childPid;
      // No child pid means bwrap failed before creating the sandbox: nothing to place.
      if (childPid !== undefined) await cgroup.add(childPid);
      (child.stdio[blockFd] as Writable).end('1');
    }
  } catch (error) {
    kill();
    // Unread output would hold 'close' back.
    stdout.resume();
    stderr.resume();
    if (child.pid !== undefined) await closed;
    throw error;
  }
  childPid ??= await status.childPid;

  const finished = (async (): Promise<SandboxExit> => {
    let grace: NodeJS.Timeout | undefined;
    const afterKill = () => {
      grace ??= setTimeout(() => {
        for (const stream of child.stdio) (stream as Readable | Writable | null)?.destroy();
        stdout.end();
        stderr.end();
      }, CLOSE_GRACE_MS);
    };
    child.once('exit', () => {
      if (killed) afterKill();
    });
    await closed;
    clearTimeout(grace);
    return { exitCode: killed ? undefined : status.exitCode(), killed };
  })();

  return {
    childPid,
    stdin: child.stdin,
    stdout,
    stderr,
    kill,
    exited: finished,
  };
}
