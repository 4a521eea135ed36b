import { spawnMordn } from './process.js';

export interface FinishedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The command started the service instead of exiting (it was then killed). */
  listened: boolean;
}

/**
 * Runs a `mordn` command that is expected to exit on its own (help, a refusal). Should it start
 * listening instead, or outlive `maxMs`, it is killed, so a failing test never leaves a server
 * running behind it.
 */
export async function runMordnToExit(
  args: string[],
  environment: Record<string, string>,
  maxMs = 30_000,
): Promise<FinishedRun> {
  const running = spawnMordn(args, environment);
  let listened = false;
  const listening = running
    .waitForLog((line) => line.msg === 'mordn listening', maxMs)
    .then(
      () => {
        listened = true;
      },
      () => undefined,
    );
  await Promise.race([running.exited, listening]);
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  const { code } = await running.exited;
  return { code, stdout: running.stdout.join('\n'), stderr: running.stderr.join(''), listened };
}
