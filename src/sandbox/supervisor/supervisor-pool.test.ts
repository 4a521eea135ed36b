import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnPlainSupervisor } from '../../../test/support/plain-supervisor.js';
import type { SandboxProcess } from '../runtime/sandbox-process.js';
import type { SupervisorConnection } from './supervisor-connection.js';
import { createSupervisorPool, type StartedSupervisor } from './supervisor-pool.js';

type SpawnOptions = Parameters<SupervisorConnection['spawn']>[1];

/** Real `supervisor.py` children, as a backend would start them inside its sandboxes. */
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** A supervisor whose stop kills it and then fails, as a runtime that went away does (dockerd). */
async function startSupervisor(options: { stopFails: boolean }): Promise<StartedSupervisor> {
  const { child, connection } = spawnPlainSupervisor();
  children.push(child);
  await connection.ready;
  // Commands run in /workspace inside a sandbox; here, on the host, in the temporary directory.
  const onHost: SupervisorConnection = Object.create(connection, {
    spawn: {
      value: (argv: readonly string[], spawnOptions: SpawnOptions) =>
        connection.spawn(argv, { ...spawnOptions, cwd: tmpdir() }),
    },
  });
  return {
    connection: onHost,
    stop: async () => {
      child.kill('SIGKILL');
      if (options.stopFails) throw new Error('connect ECONNREFUSED /run/runtime.sock');
    },
  };
}

async function output(process: SandboxProcess): Promise<string> {
  const chunks: Buffer[] = [];
  process.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  await process.exited;
  return Buffer.concat(chunks).toString();
}

describe('supervisor pool', () => {
  it('starts a new supervisor after one died and its clean-up failed, leaving no rejection unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let starts = 0;
      const pool = createSupervisorPool({
        idleMs: 60_000,
        start: () => {
          starts += 1;
          return startSupervisor({ stopFails: starts === 1 });
        },
      });
      const argv = ['/bin/sh', '-c', 'echo $$'];
      expect(await output(await pool.spawn('ws_pool', argv, { stdin: false }))).toMatch(/^\d+\n$/);
      const [first] = children;
      first?.kill('SIGKILL');
      await new Promise((resolve) => first?.once('exit', resolve));
      // The pool tears the dead supervisor down on its own; that stop fails.
      await new Promise((resolve) => setTimeout(resolve, 100));

      expect(await output(await pool.spawn('ws_pool', argv, { stdin: false }))).toMatch(/^\d+\n$/);
      expect(starts).toBe(2);
      await pool.stopAll();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('still tells a caller of stop that the stop failed', async () => {
    const pool = createSupervisorPool({ idleMs: 60_000, start: () => startSupervisor({ stopFails: true }) });
    await output(await pool.spawn('ws_pool', ['/bin/true'], { stdin: false }));
    await expect(pool.stop('ws_pool')).rejects.toThrow(/ECONNREFUSED/);
    expect(pool.isRunning('ws_pool')).toBe(false);
  });
});
