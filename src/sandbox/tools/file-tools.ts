import { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { WorkspaceFileError } from '../backend.js';
import { type ToolContext, ToolError } from './tool-context.js';

const MAX_LIST_ENTRIES = 1000;
/** Room left in a response for the JSON around a file's text. */
const RESPONSE_OVERHEAD_BYTES = 4096;

/** Backend refusals keep their stable code and safe message; anything else is internal. */
export function toToolError(error: unknown): ToolError {
  if (error instanceof ToolError) return error;
  if (error instanceof WorkspaceFileError) return new ToolError(error.code, error.message);
  if (error instanceof Error && error.name === 'AbortError') {
    return new ToolError('ABORTED', 'The call was cancelled; anything it started was stopped.');
  }
  return new ToolError('INTERNAL', 'The sandbox could not complete this operation.');
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/**
 * Refuses a write that would take the workspace past its byte quota, measuring the workspace now
 * (commands may have grown it since the last look). Commands themselves are never refused for
 * size, so the model can always delete files to get back under the quota.
 */
export async function requireQuota(context: ToolContext, addedBytes: number): Promise<void> {
  const { bytes } = await context.backend.usage(context.workspace.id);
  if (bytes + addedBytes > context.limits.workspaceMaxBytes) {
    context.measuredBytes = bytes;
    throw new ToolError(
      'QUOTA_EXCEEDED',
      `The workspace holds ${bytes} of ${context.limits.workspaceMaxBytes} bytes; delete files before writing ${addedBytes} more.`,
    );
  }
  context.measuredBytes = bytes + addedBytes;
}

export async function listFiles(context: ToolContext, input: { path?: string | undefined }) {
  const path = input.path ?? '.';
  const { entries, truncated } = await context.backend.listFiles(context.workspace.id, path, {
    maxEntries: MAX_LIST_ENTRIES,
  });
  return { path, entries, truncated };
}

export async function readTextFile(context: ToolContext, input: { path: string }) {
  const maxBytes = context.limits.maxOutputBytes - RESPONSE_OVERHEAD_BYTES;
  const { size, body } = await context.backend.openFile(context.workspace.id, input.path, { maxBytes });
  const bytes = await readAll(body);
  let text: string;
  try {
    if (bytes.includes(0)) throw new Error('NUL byte');
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const detected = (await fileTypeFromBuffer(bytes))?.mime ?? 'application/octet-stream';
    throw new ToolError(
      'NOT_TEXT',
      `${input.path} is a binary file (${size} bytes, detected ${detected}); inspect it with sandbox_exec instead.`,
    );
  }
  return { path: input.path, size, content: text };
}

export async function writeTextFile(context: ToolContext, input: { path: string; content: string }) {
  const bytes = Buffer.from(input.content, 'utf8');
  await requireQuota(context, bytes.length);
  const { size } = await context.backend.writeFile(context.workspace.id, input.path, Readable.from([bytes]), {
    maxBytes: bytes.length,
  });
  return { path: input.path, size };
}
