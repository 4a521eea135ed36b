import { Readable } from 'node:stream';
import { observeStreamErrors } from '../../stream-errors.js';
import {
  type DirectoryEntry,
  type ListResult,
  type SandboxBackend,
  WorkspaceFileError,
  type WorkspaceMeasure,
} from '../backend.js';
import { captureStderr, collectReply, drained, helperFailure, parseReply, readStatusLine } from './helper-protocol.js';
import { packagedSource } from './packaged-source.js';
import type { SandboxProcess } from './sandbox-process.js';
import { checkWorkspacePath, requireWorkspaceId } from './workspace-path.js';

/** The source of `fileops.py`, read once (a failed read is retried by the next call). */
export function fileHelperSource(): Promise<Buffer> {
  return packagedSource('src/sandbox/runtime/fileops.py');
}

/** Starts `fileops.py` with these arguments in a fresh sandbox of the workspace. */
export type StartHelper = (helperArguments: string[], options: { stdin: boolean }) => Promise<SandboxProcess>;

/** How long the helper may take to answer before it is killed (it never waits on anything but disk). */
const ANSWER_TIMEOUT_MS = 30_000;
/** Walking a large workspace takes longer; it is bounded by its entry cap as well. */
const USAGE_TIMEOUT_MS = 60_000;
/** Entries `usage` walks before giving up (bounded time for the quota check). */
export const USAGE_MAX_ENTRIES = 100_000;
/** Bytes per write frame; the helper refuses frames above 1 MiB. */
const FRAME_BYTES = 256 * 1024;
/** JSON of one entry: a 255-byte name escaped as `\uXXXX` at worst, plus type and size. */
const LIST_BYTES_PER_ENTRY = 255 * 6 + 128;

const ENTRY_TYPES = new Set<DirectoryEntry['type']>(['file', 'directory', 'symlink', 'other']);

function toEntry(value: unknown): DirectoryEntry {
  const entry = value as Partial<DirectoryEntry> | null;
  if (
    typeof entry?.name !== 'string' ||
    !ENTRY_TYPES.has(entry.type as DirectoryEntry['type']) ||
    !Number.isSafeInteger(entry.size)
  ) {
    throw new Error('The sandbox file helper listed a malformed entry.');
  }
  return { name: entry.name, type: entry.type as DirectoryEntry['type'], size: entry.size as number };
}

/** Lists one directory (no recursion); symlinks are reported as such, never followed. */
export async function listDirectory(start: StartHelper, path: string, maxEntries: number): Promise<ListResult> {
  const sandbox = await start(['list', path, String(maxEntries)], { stdin: false });
  const reply = await collectReply(sandbox, maxEntries * LIST_BYTES_PER_ENTRY + 4096, ANSWER_TIMEOUT_MS);
  if (!Array.isArray(reply.entries)) throw new Error('The sandbox file helper sent no entries.');
  return { entries: reply.entries.map(toEntry), truncated: reply.truncated === true };
}

/**
 * Total bytes of the workspace's regular files and how many files, directories and links it
 * holds (each inode once), refusing (`TOO_LARGE`) past `USAGE_MAX_ENTRIES`.
 */
export async function measureUsage(start: StartHelper): Promise<WorkspaceMeasure> {
  const sandbox = await start(['usage', String(USAGE_MAX_ENTRIES)], { stdin: false });
  const reply = await collectReply(sandbox, 4096, USAGE_TIMEOUT_MS);
  if (!Number.isSafeInteger(reply.bytes)) throw new Error('The sandbox file helper sent no byte count.');
  if (!Number.isSafeInteger(reply.files)) throw new Error('The sandbox file helper sent no file count.');
  return { bytes: reply.bytes as number, files: reply.files as number };
}

/** Kills the helper and waits until it is gone, discarding whatever it still had to say. */
async function stop(sandbox: SandboxProcess): Promise<void> {
  sandbox.kill();
  sandbox.stdout.resume();
  await sandbox.exited;
}

/** Reads the first status line, killing the helper if it does not come in time. */
async function statusLine(sandbox: SandboxProcess): Promise<string | undefined> {
  const timer = setTimeout(() => sandbox.kill(), ANSWER_TIMEOUT_MS);
  try {
    return await readStatusLine(sandbox.stdout);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Opens a regular file for streaming. The size is known (and checked against `maxBytes`) before
 * any byte flows; the body then carries exactly that many bytes or fails. Destroying the body
 * kills the helper.
 */
export async function openWorkspaceFile(
  start: StartHelper,
  path: string,
  maxBytes: number,
): Promise<{ size: number; body: Readable }> {
  const sandbox = await start(['read', path, String(maxBytes)], { stdin: false });
  const stderr = captureStderr(sandbox);
  let line: string | undefined;
  try {
    line = await statusLine(sandbox);
    if (line === undefined) throw helperFailure(stderr);
    const reply = parseReply(line);
    if (!Number.isSafeInteger(reply.size)) throw new Error('The sandbox file helper sent no size.');
    return { size: reply.size as number, body: streamBody(sandbox, reply.size as number) };
  } catch (error) {
    await stop(sandbox);
    throw error;
  }
}

function streamBody(sandbox: SandboxProcess, size: number): Readable {
  const source = sandbox.stdout;
  let received = 0;
  const body = new Readable({
    read() {
      source.resume();
    },
    destroy(error, callback) {
      sandbox.kill();
      callback(error);
    },
  });
  source.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > size) {
      body.destroy(new Error('The file grew while it was read.'));
      return;
    }
    if (!body.push(chunk)) source.pause();
  });
  source.once('end', () => {
    void sandbox.exited.then(({ exitCode }) => {
      if (body.destroyed) return;
      if (received === size && exitCode === 0) body.push(null);
      else body.destroy(new Error('The file changed while it was read.'));
    });
  });
  // The body can fail before its consumer starts reading (publishing creates a directory first).
  return observeStreamErrors(body);
}

function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(length);
  return header;
}

/** Sends one frame; false once the helper no longer reads (it exited and will say why). */
async function sendFrame(sandbox: SandboxProcess, data: Buffer): Promise<boolean> {
  const stdin = sandbox.stdin;
  if (!stdin || stdin.destroyed) return false;
  stdin.write(frameHeader(data.length));
  if (stdin.write(data)) return true;
  return drained(sandbox);
}

/**
 * Streams `body` into a regular file through the helper. Nothing is read from `body` until the
 * helper has opened the file, so a refusal (`SYMLINK`, `EXISTS`, …) leaves it untouched. Past
 * `maxBytes` reading stops and the partial file is removed; an error of `body` itself is rethrown
 * unchanged, also after removing what was written.
 */
export async function writeWorkspaceFile(
  start: StartHelper,
  path: string,
  body: Readable,
  options: { maxBytes: number; exclusive: boolean },
): Promise<{ size: number }> {
  // `body` (a storage download, say) may fail while the helper starts, before the loop below reads
  // it; the loop still sees that error.
  observeStreamErrors(body);
  const sandbox = await start(['write', path, String(options.maxBytes), options.exclusive ? '1' : '0'], {
    stdin: true,
  });
  const stderr = captureStderr(sandbox);
  try {
    const ready = await statusLine(sandbox);
    if (ready === undefined) throw helperFailure(stderr);
    parseReply(ready);
  } catch (error) {
    await stop(sandbox);
    throw error;
  }

  let written = 0;
  let tooLarge = false;
  let bodyError: unknown;
  let complete = true;
  try {
    sending: for await (const chunk of body) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
      written += bytes.length;
      if (written > options.maxBytes) {
        tooLarge = true;
        break;
      }
      for (let offset = 0; offset < bytes.length; offset += FRAME_BYTES) {
        if (!(await sendFrame(sandbox, bytes.subarray(offset, offset + FRAME_BYTES)))) {
          complete = false;
          break sending;
        }
      }
    }
  } catch (error) {
    bodyError = error;
  }
  // Only a complete body is committed; ending stdin without the empty frame makes the helper
  // remove the partial file.
  if (complete && !tooLarge && bodyError === undefined) await sendFrame(sandbox, Buffer.alloc(0));
  sandbox.stdin?.end();

  const timer = setTimeout(() => sandbox.kill(), ANSWER_TIMEOUT_MS);
  const result = await readStatusLine(sandbox.stdout).finally(() => clearTimeout(timer));
  sandbox.stdout.resume();
  await sandbox.exited;
  if (bodyError !== undefined) throw bodyError;
  if (tooLarge) throw new WorkspaceFileError('TOO_LARGE', `The content is larger than ${options.maxBytes} bytes.`);
  if (result === undefined) throw helperFailure(stderr);
  const reply = parseReply(result);
  if (!Number.isSafeInteger(reply.size)) throw new Error('The sandbox file helper sent no size.');
  return { size: reply.size as number };
}

function requireByteCount(maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new TypeError('maxBytes must be a non-negative integer.');
}

/**
 * The four file operations of a backend, over whatever starts `fileops.py` inside a workspace's
 * boundary: arguments are checked here, the walking is done by the helper.
 */
export function workspaceFileOperations(
  helperFor: (workspaceId: string) => Promise<StartHelper>,
): Pick<SandboxBackend, 'listFiles' | 'openFile' | 'writeFile' | 'usage'> {
  return {
    async listFiles(workspaceId, filePath, { maxEntries }) {
      requireWorkspaceId(workspaceId);
      const relative = checkWorkspacePath(filePath, { allowRoot: true });
      if (!Number.isSafeInteger(maxEntries) || maxEntries <= 0) throw new TypeError('maxEntries must be positive.');
      return listDirectory(await helperFor(workspaceId), relative, maxEntries);
    },

    async openFile(workspaceId, filePath, { maxBytes }) {
      requireWorkspaceId(workspaceId);
      const relative = checkWorkspacePath(filePath);
      requireByteCount(maxBytes);
      return openWorkspaceFile(await helperFor(workspaceId), relative, maxBytes);
    },

    async writeFile(workspaceId, filePath, body, { maxBytes, exclusive = false }) {
      requireWorkspaceId(workspaceId);
      const relative = checkWorkspacePath(filePath);
      requireByteCount(maxBytes);
      return writeWorkspaceFile(await helperFor(workspaceId), relative, body, { maxBytes, exclusive });
    },

    async usage(workspaceId) {
      requireWorkspaceId(workspaceId);
      return measureUsage(await helperFor(workspaceId));
    },
  };
}
