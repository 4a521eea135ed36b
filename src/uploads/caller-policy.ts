import { getEffectiveConfig } from '../agents/agent-configs.js';
import type { AgentConfig } from '../agents/config-schema.js';
import type { AgentPrincipal } from '../auth/permissions.js';
import type { AppDependencies } from '../dependencies.js';
import { evaluateSandboxGate, type SandboxGateResult, sandboxGateDependencies } from '../sandbox/gate.js';
import { resolveUploadPolicy, type UploadPolicy } from './upload-policy.js';

export interface CallerUploadPolicy {
  publishedConfig: AgentConfig;
  sandbox: SandboxGateResult;
  policy: UploadPolicy;
}

/**
 * The upload policy for this caller right now: the agent's published config, the managed-sandbox
 * gate (so the managed document set is offered only while it is open) and the operator's limits.
 * The gate stays closed when the request turned sandboxes off (`sandboxesOff`) or the service's
 * own chat has no managed integration (no `selfBaseUrl`): documents nothing can open are not taken.
 */
export async function resolveCallerUploadPolicy(
  deps: Pick<AppDependencies, 'config' | 'database' | 'sandbox' | 'selfBaseUrl'>,
  principal: AgentPrincipal,
  options: { sandboxesOff?: boolean } = {},
): Promise<CallerUploadPolicy> {
  const publishedConfig = await getEffectiveConfig(deps.database.db, principal.agentId);
  const sandbox = await evaluateSandboxGate(sandboxGateDependencies(deps), {
    publishedConfig,
    tenantId: principal.tenantId,
    userId: principal.userId,
    integrationOff: options.sandboxesOff === true || deps.selfBaseUrl === undefined,
  });
  return {
    publishedConfig,
    sandbox,
    policy: resolveUploadPolicy(deps.config.uploads, publishedConfig, sandbox.available),
  };
}
