import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './free-port.js';
import { toolEnvironment } from './run-command.js';

export interface NextApp {
  url: string;
  /** Everything `next start` printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * `next start` (the production server of a finished `next build`) for the example in `dir`, on a
 * free port of 127.0.0.1, resolving once it answers. It runs in its own process group, which
 * `stop` ends as a whole.
 */
export async function startNextApp(dir: string, environment: Record<string, string>): Promise<NextApp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    process.execPath,
    [path.join(dir, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '-p', String(port), '-H', '127.0.0.1'],
    { cwd: dir, env: toolEnvironment(environment), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(-child.pid, 'SIGTERM');
      const killer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
  };

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`next start exited (${child.exitCode}):\n${output}`);
    try {
      const response = await fetch(url, { redirect: 'manual' });
      await response.arrayBuffer();
      if (response.status < 500) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`next start did not answer within 60 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { url, output: () => output, stop };
}
