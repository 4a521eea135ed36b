import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { hostProcesses, isRunning } from '../../../test/support/host-processes.js';
import { spawnPlainSupervisor } from '../../../test/support/plain-supervisor.js';
import { eventually } from '../../../test/support/poll.js';
import type { SandboxProcess } from '../runtime/sandbox-process.js';
import type { SupervisorConnection } from './supervisor-connection.js';

/**
 * The supervisor protocol end to end against the real `supervisor.py`, run here as a plain child
 * process (the backends run the same program inside their sandboxes).
 */
const children: ChildProcess[] = [];

function startSupervisor(): { child: ChildProcess; connection: SupervisorConnection } {
  const started = spawnPlainSupervisor();
  children.push(started.child);
  return started;
}

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

async function collect(process: SandboxProcess) {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  process.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  process.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exit = await process.exited;
  return { exit, stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
}

const options = { stdin: false, cwd: tmpdir() } as const;

describe('supervisor', () => {
  it('runs commands with their output, exit status and limits', async () => {
    const { connection } = startSupervisor();
    expect((await connection.ready).pid).toBeGreaterThan(0);
    const result = await collect(
      connection.spawn(['/bin/sh', '-c', 'echo out; echo err >&2; ulimit -n; exit 3'], {
        ...options,
        limits: { nofile: 77 },
      }),
    );
    expect(result).toEqual({
      exit: { exitCode: 3, killed: false, cpuSeconds: expect.any(Number) },
      stdout: 'out\n77\n',
      stderr: 'err\n',
    });
  });

  it('reports the CPU time of the command and of the processes it left behind', async () => {
    const { connection } = startSupervisor();
    // A background child burns about 0.3 s of CPU and is still running when the shell exits.
    const burn = 'python3 -c "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass"';
    const result = await collect(
      connection.spawn(['/bin/sh', '-c', `(${burn}; sleep 5) & sleep 0.6; exit 0`], options),
    );
    expect(result.exit.exitCode).toBe(0);
    expect(result.exit.cpuSeconds).toBeGreaterThanOrEqual(0.3);
    expect(result.exit.cpuSeconds).toBeLessThan(1);
  });

  it('reports a program that cannot start as exit 127 with the reason', async () => {
    const { connection } = startSupervisor();
    const result = await collect(connection.spawn(['/nonexistent/program'], options));
    expect(result.exit).toMatchObject({ exitCode: 127, killed: false });
    expect(result.exit.error).toMatch(/nonexistent\/program: No such file or directory/);
  });

  it('kills everything a command left behind when it ends, and nothing of another command', async () => {
    const { connection } = startSupervisor();
    const tag = `${Date.now() % 100_000}7`;
    const neighbour = connection.spawn(['/bin/sh', '-c', `sleep 1.5; echo neighbour`], options);
    const result = await collect(
      connection.spawn(
        [
          '/bin/sh',
          '-c',
          `sleep ${tag}1 & setsid sleep ${tag}2 & nohup sleep ${tag}3 >/dev/null 2>&1 & (sleep ${tag}4 &); echo started`,
        ],
        options,
      ),
    );
    expect(result).toMatchObject({ exit: { exitCode: 0 }, stdout: 'started\n' });
    expect(await hostProcesses(`sleep ${tag}`)).toEqual([]);
    expect((await collect(neighbour)).stdout).toBe('neighbour\n');
  });

  it('kills a command and its detached descendants on request', async () => {
    const { connection } = startSupervisor();
    const tag = `${Date.now() % 100_000}8`;
    const process = connection.spawn(['/bin/sh', '-c', `setsid sleep ${tag}1 & sleep ${tag}2`], options);
    setTimeout(() => process.kill(), 300);
    const result = await collect(process);
    expect(result.exit).toMatchObject({ exitCode: undefined, killed: true });
    expect(await hostProcesses(`sleep ${tag}`)).toEqual([]);
  });

  it('streams stdin and output beyond the flow-control windows without loss', async () => {
    const { connection } = startSupervisor();
    const input = connection.spawn(['/bin/sh', '-c', 'wc -c'], { ...options, stdin: true });
    Readable.from([Buffer.alloc(1_500_000, 1), Buffer.alloc(700_000, 2)]).pipe(
      input.stdin as NonNullable<SandboxProcess['stdin']>,
    );
    expect((await collect(input)).stdout.trim()).toBe('2200000');

    // A consumer that reads slowly: the command waits on its pipe instead of the host buffering.
    const output = connection.spawn(['/bin/sh', '-c', 'head -c 3000000 /dev/zero'], options);
    let received = 0;
    output.stdout.pause();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(output.stdout.readableLength).toBeLessThanOrEqual(512 * 1024);
    output.stdout.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    output.stdout.resume();
    await output.exited;
    expect(received).toBe(3_000_000);
  });

  it('starts each command with only its pipes, oom_score_adj 1000 and its own limits, under a reaper kept for those limits', async () => {
    const { connection } = startSupervisor();
    const probe = (limits: { nofile: number }) =>
      collect(
        connection.spawn(
          [
            '/bin/sh',
            '-c',
            // The reaper raises the score once the exec is done: a moment later, not before.
            'sleep 0.2; ls /proc/$$/fd | tr "\\n" " "; echo; cat /proc/$$/oom_score_adj; cat /proc/$PPID/oom_score_adj; ulimit -Sn; ulimit -Hn; echo $PPID',
          ],
          { ...options, limits },
        ),
      );
    const lines = async (limits: { nofile: number }) => {
      const result = await probe(limits);
      expect(result.exit).toEqual({ exitCode: 0, killed: false, cpuSeconds: expect.any(Number) });
      const [fds, score, reaperScore, soft, hard, reaper] = result.stdout.trim().split('\n');
      return { fds, score, reaperScore: Number(reaperScore), soft, hard, reaper: Number(reaper) };
    };
    const ownScore = Number((await readFile('/proc/self/oom_score_adj', 'utf8')).trim());
    const first = await lines({ nofile: 77 });
    expect(first).toMatchObject({ fds: '0 1 2 ', score: '1000', soft: '77', hard: '77' });
    // The reaper stays where the supervisor is (it inherited this process's score).
    expect(first.reaperScore).toBe(ownScore);
    // The same limits: the same reaper; other limits: another one, and neither leaks into the other.
    expect(await lines({ nofile: 77 })).toMatchObject({ reaper: first.reaper, hard: '77' });
    const other = await lines({ nofile: 99 });
    expect(other).toMatchObject({ soft: '99', hard: '99', score: '1000' });
    expect(other.reaper).not.toBe(first.reaper);
    expect(await lines({ nofile: 77 })).toMatchObject({ reaper: first.reaper, hard: '77' });
  });

  it('reports limits it cannot set as exit 127, and runs the next command', async () => {
    const { connection } = startSupervisor();
    const impossible = { nofile: 2 ** 40 };
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const result = await collect(connection.spawn(['/bin/true'], { ...options, limits: impossible }));
      expect(result.exit).toMatchObject({ exitCode: 127, killed: false });
      expect(result.exit.error).toBeTruthy();
    }
    expect((await collect(connection.spawn(['/bin/sh', '-c', 'ulimit -n'], options))).stdout).not.toBe('');
  });

  it('runs a command with stdin, the environment it is given and its working directory', async () => {
    const { connection } = startSupervisor();
    const process = connection.spawn(['sh', '-c', 'cat; echo "$EXTRA"; pwd'], {
      stdin: true,
      cwd: '/usr',
      env: { EXTRA: 'given' },
    });
    process.stdin?.end('typed\n');
    expect(await collect(process)).toMatchObject({ exit: { exitCode: 0 }, stdout: 'typed\ngiven\n/usr\n' });
    const missing = await collect(connection.spawn(['/bin/true'], { ...options, cwd: '/nonexistent' }));
    expect(missing.exit).toMatchObject({ exitCode: 127 });
    expect(missing.exit.error).toMatch(/nonexistent/);
  });

  it('fails a command whose reaper was killed, kills what it started, and runs the next one', async () => {
    const { connection } = startSupervisor();
    const tag = `${Date.now() % 100_000}9`;
    const result = await collect(
      connection.spawn(['/bin/sh', '-c', `setsid sleep ${tag}1 & sleep 0.2; kill -9 $PPID; sleep ${tag}2`], options),
    );
    expect(result.exit).toMatchObject({ exitCode: undefined, error: "the command's reaper died" });
    expect(await eventually(async () => (await hostProcesses(`sleep ${tag}`)).length === 0, { timeoutMs: 5000 })).toBe(
      true,
    );
    expect((await collect(connection.spawn(['/bin/sh', '-c', 'echo next'], options))).stdout).toBe('next\n');
  });

  it('takes its idle reapers with it when the supervisor dies', async () => {
    const { child, connection } = startSupervisor();
    await collect(connection.spawn(['/bin/true'], options));
    await collect(connection.spawn(['/bin/true'], { ...options, limits: { nofile: 50 } }));
    const reapers = (await readFile(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8'))
      .split(' ')
      .filter(Boolean)
      .map(Number);
    expect(reapers).toHaveLength(2);
    child.kill('SIGKILL');
    expect(
      await eventually(async () => (await Promise.all(reapers.map(isRunning))).every((running) => !running), {
        timeoutMs: 5000,
      }),
    ).toBe(true);
  });

  it('ends every running command when the supervisor dies, and refuses new ones', async () => {
    const { child, connection } = startSupervisor();
    await connection.ready;
    const running = connection.spawn(['/bin/sh', '-c', 'sleep 30'], options);
    child.kill('SIGKILL');
    const exit = await running.exited;
    expect(exit).toMatchObject({ exitCode: undefined, killed: false });
    expect(exit.error).toMatch(/supervisor is gone/);
    await connection.whenClosed;
    expect(connection.closed).toBe(true);
    expect((await connection.spawn(['/bin/true'], options).exited).error).toMatch(/supervisor is gone/);
  });
});
