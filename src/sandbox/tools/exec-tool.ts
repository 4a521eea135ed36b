import type { ExecResult } from '../backend.js';
import type { ToolContext } from './tool-context.js';

/**
 * Runs the command with the caller's timeout (default and ceiling from the operator). Each output
 * stream keeps at most the response budget while the command runs; what the response cannot
 * carry (both streams together, JSON escaping counted) is cut when the result is built.
 */
export async function execCommand(
  context: ToolContext,
  input: { command: string; timeoutSeconds?: number | undefined },
): Promise<Omit<ExecResult, 'aborted'>> {
  const timeoutSeconds = Math.min(
    input.timeoutSeconds ?? context.limits.execTimeoutSeconds,
    context.limits.maxExecTimeoutSeconds,
  );
  const result = await context.backend.exec(context.workspace.id, {
    command: input.command,
    timeoutMs: timeoutSeconds * 1000,
    signal: context.signal,
    maxOutputBytes: context.limits.maxOutputBytes,
  });
  const { aborted: _aborted, ...visible } = result;
  return visible;
}
