import { performance } from 'node:perf_hooks';
import type { ExecOptions, ExecResult } from '../backend.js';
import { OutputCapture } from './output-capture.js';
import type { SandboxProcess } from './sandbox-process.js';

/** Throws a TypeError for options no caller should pass (they come from the service, not users). */
export function checkExecOptions(options: ExecOptions): void {
  if (typeof options.command !== 'string') throw new TypeError('command must be a string.');
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) throw new TypeError('timeoutMs must be positive.');
  if (!Number.isSafeInteger(options.maxOutputBytes) || options.maxOutputBytes < 0) {
    throw new TypeError('maxOutputBytes must be a non-negative integer.');
  }
  if (options.onOutput !== undefined && typeof options.onOutput !== 'function') {
    throw new TypeError('onOutput must be a function.');
  }
}

/**
 * Runs one command in a sandbox `start` launches and waits for the whole sandbox to be gone.
 * Output is capped per stream while it streams (and, when `onOutput` is given, also handed to it
 * chunk by chunk as it arrives); the timeout and the abort signal both kill the entire sandbox, and
 * then report `exitCode: null`. An already aborted signal runs nothing.
 *
 * @throws when bwrap cannot start, or starts but fails to set up the sandbox (its message says why).
 */
export async function runCommand(start: () => Promise<SandboxProcess>, options: ExecOptions): Promise<ExecResult> {
  const { timeoutMs, maxOutputBytes, signal, onOutput } = options;
  const started = performance.now();
  const result = (exitCode: number | null, output: Partial<ExecResult> = {}): ExecResult => ({
    exitCode,
    stdout: '',
    stderr: '',
    truncated: false,
    timedOut: false,
    aborted: false,
    ...output,
    durationMs: Math.round(performance.now() - started),
  });
  if (signal?.aborted) return result(null, { aborted: true });

  const sandbox = await start();
  const stdout = new OutputCapture(maxOutputBytes);
  const stderr = new OutputCapture(maxOutputBytes);
  stdout.attach(sandbox.stdout);
  stderr.attach(sandbox.stderr);
  if (onOutput) {
    sandbox.stdout.on('data', (chunk: Buffer) => onOutput('stdout', chunk));
    sandbox.stderr.on('data', (chunk: Buffer) => onOutput('stderr', chunk));
  }
  let stopReason: 'timeout' | 'abort' | undefined;
  const stop = (reason: 'timeout' | 'abort') => {
    stopReason ??= reason;
    sandbox.kill();
  };
  const timer = setTimeout(() => stop('timeout'), timeoutMs);
  const onAbort = () => stop('abort');
  signal?.addEventListener('abort', onAbort, { once: true });
  // Aborted while the sandbox was starting.
  if (signal?.aborted) onAbort();
  const exit = await sandbox.exited.finally(() => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  });

  if (!exit.killed && exit.exitCode === undefined && exit.signal === undefined) {
    if (exit.error && !exit.notStarted) {
      // The supervisor (and with it the workspace's sandbox) went away mid-call: a crash, or a
      // runtime that ends the whole sandbox when it runs out of memory (gVisor).
      throw new Error(`The workspace sandbox ended while the command ran (${exit.error})`);
    }
    throw new Error(`The sandbox could not start: ${exit.error ?? stderr.text().trim().split('\n', 1)[0]}`);
  }
  return result(exit.killed ? null : (exit.exitCode ?? null), {
    stdout: stdout.text(),
    stderr: stderr.text(),
    truncated: stdout.truncated || stderr.truncated,
    // A command that ended on its own just as the timer fired was not killed: it keeps its status.
    timedOut: exit.killed && stopReason === 'timeout',
    aborted: exit.killed && stopReason === 'abort',
    ...(exit.cpuSeconds === undefined ? {} : { cpuSeconds: exit.cpuSeconds }),
  });
}
