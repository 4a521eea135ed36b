import { Readable } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { isServiceError } from '../../errors.js';
import { WorkspaceFileError } from '../backend.js';
import { type ToolContext, ToolError } from './tool-context.js';
import { measureWorkspaceUsage } from './workspace-usage.js';

const MAX_LIST_ENTRIES = 1000;
/**
 * The largest file `sandbox_read_file` reads (the most one MCP response may carry). What does not
 * fit the response is cut when the result is built, where JSON escaping is counted.
 */
const MAX_READ_BYTES = 1024 * 1024;

/** Backend refusals keep their stable code and safe message; anything else is internal. */
export function toToolError(error: unknown): ToolError {
  if (error instanceof ToolError) return error;
  if (isServiceError(error) && error.code === 'LIMIT_REACHED')
    return new ToolError(error.code, error.message, error.fields);
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

/**
 * Lists one directory, with the workspace's usage beside it (measured at the same time, so the
 * listing takes no longer): the model sees how close it is to the quota before a write fails,
 * and when retention would delete the workspace counting from this call, its latest use.
 */
export async function listFiles(context: ToolContext, input: { path?: string | undefined }) {
  const path = input.path ?? '.';
  const [{ entries, truncated }, { usage, measure }] = await Promise.all([
    context.backend.listFiles(context.workspace.id, path, { maxEntries: MAX_LIST_ENTRIES }),
    measureWorkspaceUsage(context.backend, context.workspace.id, {
      limits: context.limits,
      lastUsedAt: Date.now(),
      onError: (error) =>
        context.logger.debug({ requestId: context.requestId, err: error }, 'workspace usage not measured'),
    }),
  ]);
  if (measure) context.measuredBytes = measure.bytes;
  return { path, entries, truncated, usage };
}

export async function readTextFile(context: ToolContext, input: { path: string }) {
  const { size, body } = await context.backend
    .openFile(context.workspace.id, input.path, { maxBytes: MAX_READ_BYTES })
    .catch((error: unknown) => {
      if (error instanceof WorkspaceFileError && error.code === 'TOO_LARGE') {
        throw new ToolError(
          'TOO_LARGE',
          `${error.message} Read part of it with sandbox_exec instead (head -c, sed -n, python3).`,
        );
      }
      throw error;
    });
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
