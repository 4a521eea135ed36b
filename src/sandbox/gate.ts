import type { AgentConfig } from '../agents/config-schema.js';
import { isSandboxEnabled } from '../agents/config-schema.js';
import { isAnonymousUserId } from '../auth/user-id.js';
import type { SandboxConfig } from '../config.js';
import { effectivePolicy } from './egress/effective-policy.js';

/** The two public booleans of `GET /v1/sandbox/status`. */
export interface SandboxStatus {
  /** The agent's published config opts in. */
  enabled: boolean;
  /** Enabled, and the operator's policy and backend allow it right now. */
  available: boolean;
}

/**
 * The leg of the gate that kept it closed, for operators' logs (never sent to clients, whose
 * status stays two booleans): the published config, the caller's own opt-out, the operator's
 * switch or tenant list, an anonymous user, or the backend (not ready, or its check failed).
 */
export type SandboxGateLeg =
  | 'published-config'
  | 'integration-off'
  | 'operator-switch'
  | 'tenant-not-allowed'
  | 'anonymous-user'
  | 'backend-not-ready'
  | 'backend-check-failed'
  | 'egress-unavailable';

/** The gate's answer: the public status, and which leg closed it when it is closed. */
export interface SandboxGateResult extends SandboxStatus {
  closedBy?: SandboxGateLeg;
}

export interface SandboxGateDependencies {
  operator: SandboxConfig;
  /**
   * Whether the sandbox backend is ready (a cached probe: no side effects). Consulted only for
   * agents the operator allows, so disabled agents cost nothing. Absent means no backend: closed.
   */
  isBackendReady?: () => Promise<boolean>;
  /**
   * Why the egress proxy cannot serve, when it cannot (cached; no side effects). An agent whose
   * published policy opens a network is then unavailable: no egress rather than open egress.
   */
  egressProblem?: () => Promise<string | undefined>;
}

export interface SandboxCaller {
  /** The agent's **published** config; a draft never opens the gate. */
  publishedConfig: AgentConfig;
  tenantId: string;
  userId: string;
  /**
   * The caller has no managed-sandbox integration for this request (`createMordnHandler`'s
   * `sandboxes: false`, or a chat wired without one): uploads and hints keep the default policy.
   */
  integrationOff?: boolean;
}

/** The first leg, in order, that keeps the gate closed before the backend is asked; none when all hold (no backend counts as not ready). */
function closedLeg(deps: SandboxGateDependencies, caller: SandboxCaller): SandboxGateLeg | undefined {
  if (!isSandboxEnabled(caller.publishedConfig)) return 'published-config';
  if (caller.integrationOff) return 'integration-off';
  if (!deps.operator.enabled) return 'operator-switch';
  if (deps.operator.allowedTenants !== undefined && !deps.operator.allowedTenants.includes(caller.tenantId)) {
    return 'tenant-not-allowed';
  }
  if (isAnonymousUserId(caller.userId)) return 'anonymous-user';
  if (!deps.isBackendReady) return 'backend-not-ready';
  return undefined;
}

/**
 * The managed-sandbox gate, the one function behind every path that depends on it (status,
 * upload policy, bootstrap hints, every tool call). Open only when the published config enables
 * sandboxes, the caller has not opted out, the operator switch is on, the tenant is allowed, the
 * user is signed in (never `anon:`) and the backend is ready. Evaluated afresh on every call;
 * the backend is asked last, and a check that fails closes the gate rather than the request.
 */
export async function evaluateSandboxGate(
  deps: SandboxGateDependencies,
  caller: SandboxCaller,
): Promise<SandboxGateResult> {
  const enabled = isSandboxEnabled(caller.publishedConfig);
  const closedBy = closedLeg(deps, caller);
  const isBackendReady = deps.isBackendReady;
  if (closedBy || !isBackendReady) return { enabled, available: false, closedBy: closedBy ?? 'backend-not-ready' };
  let ready: boolean;
  try {
    ready = await isBackendReady();
  } catch {
    return { enabled, available: false, closedBy: 'backend-check-failed' };
  }
  if (!ready) return { enabled, available: false, closedBy: 'backend-not-ready' };
  const network = effectivePolicy(deps.operator.egress, caller.tenantId, caller.publishedConfig);
  if (network.mode !== 'none' && deps.egressProblem) {
    const problem = await deps.egressProblem().catch(() => 'the egress check failed');
    if (problem) return { enabled, available: false, closedBy: 'egress-unavailable' };
  }
  return { enabled, available: true };
}

/** The gate's dependencies as the app holds them. */
export function sandboxGateDependencies(deps: {
  config: { sandbox: SandboxConfig };
  sandbox?: { isReady(): Promise<boolean>; egress?: { problem(): Promise<string | undefined> } };
}): SandboxGateDependencies {
  const runtime = deps.sandbox;
  const egress = runtime?.egress;
  return {
    operator: deps.config.sandbox,
    ...(runtime ? { isBackendReady: () => runtime.isReady() } : {}),
    ...(egress ? { egressProblem: () => egress.problem() } : {}),
  };
}
