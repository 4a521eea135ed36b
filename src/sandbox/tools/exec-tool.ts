import type { ExecResult } from '../backend.js';
import { commandEnvironment } from '../egress/command-environment.js';
import { egressNotice } from '../egress/refusals.js';
import type { ToolContext } from './tool-context.js';

/**
 * Runs the command with the caller's timeout (default and ceiling from the operator), and the way
 * out its workspace's network policy opens (proxy and pip variables; none without one). When the
 * policy refused some of its connections, the result says so in one line. Each output
 * stream keeps at most the response budget while the command runs; what the response cannot
 * carry (both streams together, JSON escaping counted) is cut when the result is built. With
 * `context.onOutput`, the output is also handed over live as the command writes it.
 */
export async function execCommand(
  context: ToolContext,
  input: { command: string; timeoutSeconds?: number | undefined },
): Promise<Omit<ExecResult, 'aborted' | 'cpuSeconds'>> {
  const timeoutSeconds = Math.min(
    input.timeoutSeconds ?? context.limits.execTimeoutSeconds,
    context.limits.maxExecTimeoutSeconds,
  );
  const environment = commandEnvironment(context.network);
  const startedAt = Date.now();
  const result = await context.backend.exec(context.workspace.id, {
    command: input.command,
    timeoutMs: timeoutSeconds * 1000,
    signal: context.signal,
    maxOutputBytes: context.limits.maxOutputBytes,
    ...(environment ? { environment } : {}),
    ...(context.onOutput ? { onOutput: context.onOutput } : {}),
  });
  // CPU time is for traces and metering, not part of the result the model sees.
  const { aborted: _aborted, cpuSeconds: _cpuSeconds, ...visible } = result;
  const notice = egressNotice(context.egress?.refusalsSince(context.workspace.id, startedAt) ?? []);
  if (!notice) return visible;
  return { ...visible, message: visible.message ? `${visible.message} ${notice}` : notice };
}
