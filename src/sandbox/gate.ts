import type { AgentConfig } from '../agents/config-schema.js';
import { isSandboxEnabled } from '../agents/config-schema.js';
import { isAnonymousUserId } from '../auth/user-id.js';
import type { SandboxConfig } from '../config.js';

/** The two public booleans of `GET /v1/sandbox/status`. */
export interface SandboxStatus {
  /** The agent's published config opts in. */
  enabled: boolean;
  /** Enabled, and the operator's policy and backend allow it right now. */
  available: boolean;
}

export interface SandboxGateDependencies {
  operator: SandboxConfig;
  /**
   * Whether the sandbox backend is ready (a cached probe: no side effects). Consulted only for
   * agents the operator allows, so disabled agents cost nothing. Absent means no backend: closed.
   */
  isBackendReady?: () => Promise<boolean>;
}

export interface SandboxCaller {
  /** The agent's **published** config; a draft never opens the gate. */
  publishedConfig: AgentConfig;
  tenantId: string;
  userId: string;
}

/**
 * The managed-sandbox gate, the one function behind every path that depends on it (status,
 * upload policy, bootstrap hints, every tool call). Open only when the published config enables
 * sandboxes, the operator switch is on, the tenant is allowed, the user is signed in (never
 * `anon:`) and the backend is ready. Evaluated afresh on every call.
 */
export async function evaluateSandboxGate(
  deps: SandboxGateDependencies,
  caller: SandboxCaller,
): Promise<SandboxStatus> {
  const enabled = isSandboxEnabled(caller.publishedConfig);
  const allowedByOperator =
    deps.operator.enabled &&
    (deps.operator.allowedTenants === undefined || deps.operator.allowedTenants.includes(caller.tenantId)) &&
    !isAnonymousUserId(caller.userId);
  if (!enabled || !allowedByOperator || !deps.isBackendReady) return { enabled, available: false };
  return { enabled, available: await deps.isBackendReady() };
}

/** The gate's dependencies as the app holds them. */
export function sandboxGateDependencies(deps: {
  config: { sandbox: SandboxConfig };
  sandbox?: { isReady(): Promise<boolean> };
}): SandboxGateDependencies {
  const runtime = deps.sandbox;
  return { operator: deps.config.sandbox, ...(runtime ? { isBackendReady: () => runtime.isReady() } : {}) };
}
