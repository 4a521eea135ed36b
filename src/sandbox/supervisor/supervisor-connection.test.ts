import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { hostProcesses } from '../../../test/support/host-processes.js';
import { spawnPlainSupervisor } from '../../../test/support/plain-supervisor.js';
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
    expect(result).toEqual({ exit: { exitCode: 3, killed: false }, stdout: 'out\n77\n', stderr: 'err\n' });
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
