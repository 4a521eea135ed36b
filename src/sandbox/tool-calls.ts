import path from 'node:path';
import type { Kysely } from 'kysely';
import { recordToolCall } from '../admin/tenant-usage.js';
import { getEffectiveConfig } from '../agents/agent-configs.js';
import type { AgentPrincipal } from '../auth/permissions.js';
import type { Config, SandboxToolName } from '../config.js';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { FileStorage } from '../storage/file-storage.js';
import { traceSandboxCall } from '../telemetry/sandbox-spans.js';
import { sandboxCpuRefusal } from '../usage/limits.js';
import type { UsageRecorder } from '../usage/usage-ledger.js';
import { type EffectivePolicy, effectivePolicy } from './egress/effective-policy.js';
import { authorizeToolCall } from './execution-policy.js';
import { evaluateSandboxGate, sandboxGateDependencies } from './gate.js';
import { consumeRateLimit } from './rate-limit.js';
import type { SandboxRuntime } from './sandbox-runtime.js';
import { checkToolArguments } from './tools/check-arguments.js';
import { dispatchSandboxTool } from './tools/dispatch.js';
import { toToolError } from './tools/file-tools.js';
import type { ToolContext, ToolErrorCode } from './tools/tool-context.js';
import {
  acquireWorkspaceLease,
  ensureWorkspaceRecord,
  finishWorkspaceCall,
  recordWorkspaceUse,
  type Workspace,
} from './workspaces.js';

export interface SandboxCallDependencies {
  db: Kysely<DatabaseSchema>;
  config: Config;
  sandbox: SandboxRuntime | undefined;
  storage: FileStorage;
  logger: Logger;
  /** Where each call that ran is counted (by tool and outcome); without it no limit is checked either. */
  usage?: UsageRecorder;
}

/**
 * Why a call may not run, reported to the model as an `isError` result; a limit reached carries
 * the same `limit`, `value`, `used` and `resetAt` as the HTTP problem.
 */
export type Refusal = { code: ToolErrorCode; message: string } & Partial<Record<string, string | number | null>>;

export type Admission =
  | { kind: 'refused'; refusal: Refusal }
  | {
      kind: 'admitted';
      tool: SandboxToolName;
      /** The arguments as the tool's schema parsed them. */
      input: Record<string, unknown>;
      workspace: Workspace;
      runtime: SandboxRuntime;
      leaseId: string;
      network: EffectivePolicy;
    };

const RATE_WINDOW_MS = 60_000;

/** A call that passed every check and may take a slot in its workspace. */
export type CheckedCall = {
  kind: 'checked';
  tool: SandboxToolName;
  input: Record<string, unknown>;
  runtime: SandboxRuntime;
  /** What the workspace's code may reach, from the published config read for this call. */
  network: EffectivePolicy;
};

/**
 * Decides whether a `tools/call` may run, in order: the per-user rate limit (429), the full
 * managed-sandbox gate (published config, operator, tenant, user, backend), input validation (an
 * unknown tool or invalid arguments are refused with a stable code, touching nothing) and the
 * execution policy (allow-list, then the custom hook; fails closed). It provisions nothing:
 * `reserveWorkspaceSlot` does, once the protocol layer has accepted the request as a live call.
 */
export async function checkToolCall(
  deps: SandboxCallDependencies,
  principal: AgentPrincipal,
  params: { name?: unknown; arguments?: unknown },
): Promise<CheckedCall | Extract<Admission, { kind: 'refused' }>> {
  const operator = deps.config.sandbox;
  const rate = await consumeRateLimit(
    deps.db,
    `sandbox-calls:${JSON.stringify([principal.tenantId, principal.agentId, principal.userId])}`,
    { limit: operator.callsPerMinute, windowMs: RATE_WINDOW_MS },
  );
  if (!rate.allowed) {
    throw new ServiceError(
      'RATE_LIMITED',
      `Too many sandbox tool calls: at most ${operator.callsPerMinute} per minute per user.`,
      { headers: { 'Retry-After': String(rate.retryAfterSeconds) } },
    );
  }

  const publishedConfig = await getEffectiveConfig(deps.db, principal.agentId);
  const status = await evaluateSandboxGate(sandboxGateDependencies(deps), {
    publishedConfig,
    tenantId: principal.tenantId,
    userId: principal.userId,
  });
  const runtime = deps.sandbox;
  if (!status.available || !runtime) {
    return {
      kind: 'refused',
      refusal: {
        code: 'SANDBOX_UNAVAILABLE',
        message: status.enabled
          ? 'Managed sandboxes are unavailable right now.'
          : 'Managed sandboxes are not enabled for this agent: enable and publish them first.',
      },
    };
  }

  const checked = checkToolArguments(operator, params.name, params.arguments);
  if (!checked.ok) return { kind: 'refused', refusal: checked.refusal };

  const decision = await authorizeToolCall(operator, runtime.authorize, {
    tool: checked.tool,
    input: checked.input,
    principal,
  });
  if (!decision.allowed) return { kind: 'refused', refusal: { code: 'POLICY_DENIED', message: decision.reason } };
  // Over the day's CPU limit nothing new starts; a call already running finishes.
  const overLimit = deps.usage ? await sandboxCpuRefusal(deps.db, principal, Date.now()) : undefined;
  if (overLimit) {
    return { kind: 'refused', refusal: { code: 'LIMIT_REACHED', message: overLimit.message, ...overLimit.fields } };
  }
  const network = effectivePolicy(operator.egress, principal.tenantId, publishedConfig);
  return { kind: 'checked', tool: checked.tool, input: checked.input, runtime, network };
}

/**
 * Takes a concurrency slot in the caller's workspace for a checked call (429 when all are busy).
 * Only here is anything provisioned: the workspace record is created, lazily, by the first call
 * that gets this far.
 */
export async function reserveWorkspaceSlot(
  deps: SandboxCallDependencies,
  principal: AgentPrincipal,
  call: CheckedCall,
): Promise<Extract<Admission, { kind: 'admitted' }>> {
  const operator = deps.config.sandbox;
  const owner = { tenantId: principal.tenantId, agentId: principal.agentId, userId: principal.userId };
  const workspace = await ensureWorkspaceRecord(deps.db, owner, call.runtime.backend.kind);
  const leaseId = await acquireWorkspaceLease(deps.db, workspace.id, {
    max: operator.maxConcurrentCalls,
    // Longest a call can run, plus room for file transfers; a crashed replica frees its slots then.
    ttlMs: (operator.maxExecTimeoutSeconds + 60) * 1000,
  });
  if (!leaseId) {
    throw new ServiceError(
      'RATE_LIMITED',
      `This workspace is already running ${operator.maxConcurrentCalls} calls; retry when one finishes.`,
      { headers: { 'Retry-After': '1' } },
    );
  }
  return {
    kind: 'admitted',
    tool: call.tool,
    input: call.input,
    workspace,
    runtime: call.runtime,
    leaseId,
    network: call.network,
  };
}

/** When this process last started measuring each workspace's usage. */
const lastMeasured = new Map<string, number>();
const MEASURE_INTERVAL_MS = 30_000;

/**
 * After a command ran, its workspace's size is measured off the request path, at most every
 * 30 s per workspace: the caller does not wait for it, and every quota check measures afresh
 * anyway. The stored figure is for reports and the operator's view.
 */
function refreshUsageInBackground(deps: SandboxCallDependencies, runtime: SandboxRuntime, workspaceId: string): void {
  const now = Date.now();
  if (now - (lastMeasured.get(workspaceId) ?? 0) < MEASURE_INTERVAL_MS) return;
  lastMeasured.set(workspaceId, now);
  if (lastMeasured.size > 10_000) lastMeasured.clear();
  runtime.backend
    .usage(workspaceId)
    .then(({ bytes }) => recordWorkspaceUse(deps.db, workspaceId, { bytes }))
    .catch((error: unknown) => deps.logger.debug({ workspaceId, err: error }, 'workspace usage not measured'));
}

export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: Refusal };

/** How one admitted call runs: its abort signal, its request id and, optionally, its live output. */
export interface AdmittedCallOptions {
  signal: AbortSignal;
  requestId: string;
  /** Receives `sandbox_exec` output as the command writes it (other tools ignore it). */
  onOutput?: ToolContext['onOutput'];
}

/**
 * Runs an admitted call in the caller's own workspace and always releases its slot. Failures
 * come back as stable codes; nothing from an unexpected error reaches the model. Every call that
 * ran is recorded once (tool, duration, outcome) for the operator's per-tenant usage.
 */
export async function runAdmittedCall(
  deps: SandboxCallDependencies,
  admission: Extract<Admission, { kind: 'admitted' }>,
  principal: AgentPrincipal,
  call: AdmittedCallOptions,
): Promise<ToolOutcome> {
  const { runtime, workspace } = admission;
  const startedAt = Date.now();
  let ok = false;
  let update: { placement?: string; bytes?: number } = {};
  try {
    const { placement } = await runtime.backend.ensureWorkspace(workspace.id);
    update = { placement };
    const context: ToolContext = {
      backend: runtime.backend,
      workspace,
      owner: { tenantId: principal.tenantId, agentId: principal.agentId, userId: principal.userId },
      db: deps.db,
      storage: deps.storage,
      logger: deps.logger,
      requestId: call.requestId,
      limits: deps.config.sandbox,
      publishMaxBytes: deps.config.uploads.managedMaxBytes,
      tempDir: path.join(deps.config.dataDir, 'tmp'),
      signal: call.signal,
      network: admission.network,
      ...(runtime.egress ? { egress: runtime.egress } : {}),
      ...(call.onOutput ? { onOutput: call.onOutput } : {}),
      ...(deps.usage ? { usage: deps.usage } : {}),
    };
    try {
      const result = await traceSandboxCall(
        admission.tool,
        admission.input,
        { captureContent: deps.config.telemetry.captureContent },
        () => dispatchSandboxTool(context, admission.tool, admission.input),
      );
      if (admission.tool === 'sandbox_exec') refreshUsageInBackground(deps, runtime, workspace.id);
      ok = true;
      return { ok: true, result };
    } finally {
      if (context.measuredBytes !== undefined) update = { ...update, bytes: context.measuredBytes };
    }
  } catch (error) {
    const toolError = toToolError(
      call.signal.aborted ? Object.assign(new Error('aborted'), { name: 'AbortError' }) : error,
    );
    if (toolError.code === 'INTERNAL') {
      deps.logger.error({ requestId: call.requestId, tool: admission.tool, err: error }, 'sandbox tool failed');
    }
    return { ok: false, error: { code: toolError.code, message: toolError.message, ...toolError.fields } };
  } finally {
    await finishWorkspaceCall(deps.db, workspace.id, admission.leaseId, update).catch((error: unknown) =>
      deps.logger.warn({ requestId: call.requestId, err: error }, 'could not release a workspace lease'),
    );
    const { tenantId, agentId, userId } = principal;
    const durationMs = Date.now() - startedAt;
    deps.usage?.addToolCall({ tenantId, agentId, userId }, { tool: admission.tool, ok });
    await recordToolCall(deps.db, { tenantId, agentId, userId, tool: admission.tool, startedAt, durationMs, ok }).catch(
      (error: unknown) => deps.logger.warn({ requestId: call.requestId, err: error }, 'could not record a tool call'),
    );
    // The sandbox's CPU since its last reading, billed without holding up the result.
    runtime.meter?.afterCall(workspace.id);
  }
}
