import type { Readable } from 'node:stream';
import { WorkspaceFileError, type WorkspaceFileErrorCode } from '../backend.js';
import { OutputCapture } from './output-capture.js';
import type { SandboxProcess } from './sandbox-process.js';

/** The service's half of the line-and-frames protocol `fileops.py` speaks (see its docstring). */

const REFUSAL_CODES = new Set<WorkspaceFileErrorCode>([
  'INVALID_PATH',
  'NOT_FOUND',
  'NOT_A_FILE',
  'NOT_A_DIRECTORY',
  'SYMLINK',
  'TOO_LARGE',
  'EXISTS',
]);
/** A status line is small JSON; a longer one means something other than the helper is talking. */
const MAX_STATUS_LINE_BYTES = 4096;
const STDERR_EXCERPT_BYTES = 2048;

/** A successful answer of the helper, with whatever fields its operation returns. */
export type HelperReply = { ok: true } & Record<string, unknown>;

/** Drains stderr into a small excerpt, for the message of an unexpected failure. */
export function captureStderr(sandbox: SandboxProcess): OutputCapture {
  const stderr = new OutputCapture(STDERR_EXCERPT_BYTES);
  stderr.attach(sandbox.stderr);
  return stderr;
}

/** The error for a helper that stopped without a usable answer. */
export function helperFailure(stderr: OutputCapture, reason = 'stopped without an answer'): Error {
  const detail = stderr.text().trim();
  return new Error(`The sandbox file helper ${reason}${detail ? `: ${detail}` : '.'}`);
}

/**
 * Parses one status line: a success comes back, a refusal becomes a `WorkspaceFileError` with
 * its stable code, anything else a plain `Error` (the helper's message is only `strerror` text).
 */
export function parseReply(line: string): HelperReply {
  let reply: unknown;
  try {
    reply = JSON.parse(line);
  } catch {
    throw new Error('The sandbox file helper answered with something other than JSON.');
  }
  if (typeof reply !== 'object' || reply === null || !('ok' in reply)) {
    throw new Error('The sandbox file helper answered with an unexpected shape.');
  }
  if (reply.ok === true) return reply as HelperReply;
  const code = 'code' in reply && typeof reply.code === 'string' ? reply.code : 'FAILED';
  const message = 'message' in reply && typeof reply.message === 'string' ? reply.message : 'Unknown error.';
  if (REFUSAL_CODES.has(code as WorkspaceFileErrorCode)) {
    throw new WorkspaceFileError(code as WorkspaceFileErrorCode, message);
  }
  throw new Error(`The file operation failed in the sandbox: ${message}`);
}

/** Resolves on the next event that may change what `stream.read()` returns. */
function nextReadableEvent(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      for (const event of ['readable', 'end', 'close', 'error']) stream.off(event, done);
      resolve();
    };
    for (const event of ['readable', 'end', 'close', 'error']) stream.once(event, done);
  });
}

/**
 * Reads one `\n`-terminated status line, leaving whatever follows it (a file's bytes, the next
 * line) unread in `stream`. Undefined when the stream ends first.
 */
export async function readStatusLine(stream: Readable): Promise<string | undefined> {
  const parts: Buffer[] = [];
  let length = 0;
  for (;;) {
    for (let chunk = stream.read() as Buffer | null; chunk !== null; chunk = stream.read() as Buffer | null) {
      const newline = chunk.indexOf(0x0a);
      if (newline >= 0) {
        if (newline + 1 < chunk.length) stream.unshift(chunk.subarray(newline + 1));
        parts.push(chunk.subarray(0, newline));
        return Buffer.concat(parts).toString('utf8');
      }
      parts.push(chunk);
      length += chunk.length;
      if (length > MAX_STATUS_LINE_BYTES) throw new Error('The sandbox file helper sent an overlong status line.');
    }
    if (stream.readableEnded || stream.destroyed) return undefined;
    await nextReadableEvent(stream);
  }
}

/**
 * Collects a helper's whole (single-line) answer, bounded by `maxBytes`, and parses it. The
 * sandbox is killed when it takes longer than `timeoutMs`.
 */
export async function collectReply(sandbox: SandboxProcess, maxBytes: number, timeoutMs: number): Promise<HelperReply> {
  const stdout = new OutputCapture(maxBytes);
  stdout.attach(sandbox.stdout);
  const stderr = captureStderr(sandbox);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    sandbox.kill();
  }, timeoutMs);
  await sandbox.exited.finally(() => clearTimeout(timer));
  if (timedOut) throw helperFailure(stderr, 'timed out');
  if (stdout.truncated) throw new Error('The sandbox file helper answered with more than its bound.');
  const line = stdout.text().split('\n', 1)[0];
  if (!line) throw helperFailure(stderr);
  return parseReply(line);
}

/** Waits until `sandbox.stdin` can take more: true, or false once it is gone (the helper exited; its answer says why). */
export function drained(sandbox: SandboxProcess): Promise<boolean> {
  const stdin = sandbox.stdin;
  if (!stdin || stdin.destroyed || stdin.writableEnded) return Promise.resolve(false);
  return new Promise((resolve) => {
    const settle = (writable: boolean) => () => {
      stdin.off('drain', onDrain);
      stdin.off('close', onClose);
      resolve(writable);
    };
    const onDrain = settle(true);
    const onClose = settle(false);
    stdin.once('drain', onDrain);
    stdin.once('close', onClose);
  });
}
