import type { SandboxToolName } from '../../config.js';
import { execCommand } from './exec-tool.js';
import { listFiles, readTextFile, writeTextFile } from './file-tools.js';
import type { ToolContext } from './tool-context.js';
import { importFile, publishFile } from './transfer-tools.js';

/** Runs one validated tool call in its context. Throws `ToolError`/`WorkspaceFileError` on refusal. */
export function dispatchSandboxTool(
  context: ToolContext,
  name: SandboxToolName,
  input: Record<string, unknown>,
): Promise<unknown> {
  switch (name) {
    case 'sandbox_exec':
      return execCommand(context, input as { command: string; timeoutSeconds?: number });
    case 'sandbox_list_files':
      return listFiles(context, input as { path?: string });
    case 'sandbox_read_file':
      return readTextFile(context, input as { path: string });
    case 'sandbox_write_file':
      return writeTextFile(context, input as { path: string; content: string });
    case 'sandbox_import_file':
      return importFile(context, input as { storagePath: string });
    case 'sandbox_publish_file':
      return publishFile(context, input as { path: string; filename?: string });
  }
}
