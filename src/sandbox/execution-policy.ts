import type { AgentPrincipal } from '../auth/permissions.js';
import type { SandboxConfig, SandboxToolName } from '../config.js';

/** One tool call as the execution policy sees it. */
export interface ToolCall {
  tool: SandboxToolName;
  /** The validated input. */
  input: Record<string, unknown>;
  principal: AgentPrincipal;
}

/** A custom authorization hook: `true` allows, `false` or a throw denies. */
export type ToolAuthorizer = (call: ToolCall) => boolean | Promise<boolean>;

export type PolicyDecision = { allowed: true } | { allowed: false; reason: string };

/**
 * Decides, before dispatch, whether a tool call may run: the operator's allow-list first, then the
 * custom hook. It fails closed — a hook that throws, hangs past `timeoutMs` or answers anything
 * but `true` denies the call.
 */
export async function authorizeToolCall(
  operator: Pick<SandboxConfig, 'allowedTools'>,
  authorize: ToolAuthorizer | undefined,
  call: ToolCall,
  timeoutMs = 5_000,
): Promise<PolicyDecision> {
  if (operator.allowedTools && !operator.allowedTools.includes(call.tool)) {
    return { allowed: false, reason: `The operator does not allow ${call.tool}.` };
  }
  if (!authorize) return { allowed: true };
  let timer: NodeJS.Timeout | undefined;
  try {
    const verdict = await Promise.race([
      Promise.resolve().then(() => authorize(call)),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    return verdict === true ? { allowed: true } : { allowed: false, reason: 'The execution policy denied this call.' };
  } catch {
    return { allowed: false, reason: 'The execution policy denied this call.' };
  } finally {
    clearTimeout(timer);
  }
}
