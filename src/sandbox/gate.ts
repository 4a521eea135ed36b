import type { AgentConfig } from '../agents/config-schema.js';
import { isSandboxEnabled } from '../agents/config-schema.js';
import { isAnonymousUserId } from '../auth/user-id.js';
import type { Config } from '../config.js';

/** The two public booleans of `GET /v1/sandbox/status`. */
export interface SandboxStatus {
  /** The agent's published config opts in. */
  enabled: boolean;
  /** Enabled, and the operator's policy and backend allow it right now. */
  available: boolean;
}

export interface SandboxGateDependencies {
  operator: Config['sandbox'];
  /**
   * Whether the sandbox backend is ready (a cached probe: no side effects). Consulted only for
   * agents that are enabled and allowed by the operator, so disabled agents cost nothing.
   */
  backendReady?: () => Promise<boolean>;
}

/**
 * The managed-sandbox gate, used by every path that depends on it (status, upload policy,
 * bootstrap hints, tool calls). Only the **published** config counts; the operator switch and
 * backend readiness must agree, and the user must be signed in (never `anon:`). Evaluated afresh
 * on every call: nothing here is cached.
 */
export async function evaluateSandboxGate(
  deps: SandboxGateDependencies,
  caller: { publishedConfig: AgentConfig; userId: string },
): Promise<SandboxStatus> {
  const enabled = isSandboxEnabled(caller.publishedConfig);
  if (!enabled || !deps.operator.enabled || isAnonymousUserId(caller.userId)) return { enabled, available: false };
  const ready = deps.backendReady ? await deps.backendReady() : true;
  return { enabled, available: ready };
}
