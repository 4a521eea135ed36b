import { spawn } from 'node:child_process';

/** Environment for tools run on the example: without vitest's NODE_ENV=test, which Next refuses to build with. */
export function toolEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { NODE_ENV: _testMode, ...inherited } = process.env;
  return { ...inherited, NEXT_TELEMETRY_DISABLED: '1', ...extra };
}

/**
 * Runs a command to completion and resolves with its output; a non-zero exit rejects with the
 * last lines of that output, which is what one needs to see when an install or a build fails.
 */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? toolEnvironment(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(output);
      else {
        const tail = output.split('\n').slice(-60).join('\n');
        reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd}) failed (${code ?? signal}):\n${tail}`));
      }
    });
  });
}
