import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { packageRoot } from '../../src/package-root.js';

export interface MordnProcess {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  /** Resolves with the first JSON log line matching `predicate`. */
  waitForLog(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the `mordn` CLI from source (through tsx), as `npm start` / `npm run init` would. */
export function spawnMordn(args: string[], environment: Record<string, string>): MordnProcess {
  const root = packageRoot();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src', 'cli.ts'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const waiters: Array<{
    predicate: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
  }> = [];
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      stdout.push(line);
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      for (const waiter of [...waiters]) {
        if (parsed && waiter.predicate(parsed)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(parsed);
        }
      }
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      if (buffered) stdout.push(buffered);
      resolve({ code, signal });
    });
  });
  return {
    child,
    stdout,
    stderr,
    exited,
    waitForLog: (predicate, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching log line; stdout: ${stdout.join('\n')} stderr: ${stderr.join('')}`)),
          timeoutMs,
        );
        waiters.push({
          predicate,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      }),
  };
}

/** Runs a CLI command to completion. */
export async function runMordn(args: string[], environment: Record<string, string>) {
  const running = spawnMordn(args, environment);
  const { code } = await running.exited;
  return { code, stdout: running.stdout.join('\n'), stderr: running.stderr.join('') };
}
