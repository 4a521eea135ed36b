import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DatabaseSchema } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { HttpMetrics } from '../metrics.js';
import { createSandboxMeter, type SandboxMeter } from '../usage/sandbox-meter.js';
import type { UsageSink } from '../usage/usage-types.js';
import type { FinalReading, SandboxBackend } from './backend.js';
import { createBwrapBackend } from './bwrap/bwrap-backend.js';
import { createDockerBackend } from './docker/docker-backend.js';
import type { ResolveAll } from './egress/destinations.js';
import { createEgressProxy } from './egress/egress-proxy.js';
import type { ToolAuthorizer } from './execution-policy.js';
import { createCachedProbe } from './readiness-probe.js';
import type { SandboxRuntime } from './sandbox-runtime.js';
import type { TunnelStream } from './supervisor/tunnel-stream.js';

/** How long a readiness probe result is trusted before it is refreshed in the background. */
const PROBE_TTL_MS = 15_000;

function createBackend(
  config: Config,
  logger: Logger,
  onTunnel: (workspaceId: string, tunnel: TunnelStream) => void,
  onFinalReading: FinalReading,
): SandboxBackend {
  const { sandbox } = config;
  const workspacesDir = path.join(config.dataDir, 'workspaces');
  const quota = { maxBytes: sandbox.workspaceMaxBytes, maxFiles: sandbox.workspaceMaxFiles };
  const limits = {
    memoryBytes: sandbox.memoryBytes,
    processes: sandbox.processes,
    tmpBytes: sandbox.tmpBytes,
    cpus: sandbox.cpus,
  };
  if (sandbox.backend === 'docker') {
    return createDockerBackend({
      host: sandbox.docker.host,
      image: sandbox.docker.image,
      runtime: sandbox.docker.runtime,
      limits,
      quota,
      workspacesDir,
      weakLimits: sandbox.weakLimits,
      idleMs: sandbox.idleSeconds * 1000,
      onTunnel,
      onFinalReading,
    });
  }
  return createBwrapBackend({
    workspacesDir,
    limits,
    quota,
    cgroupRoot: sandbox.cgroupRoot,
    weakLimits: sandbox.weakLimits,
    idleMs: sandbox.idleSeconds * 1000,
    warmSandboxes: sandbox.warmSandboxes,
    onWarning: (message) => logger.warn({ backend: 'bwrap' }, message),
    onTunnel,
    onFinalReading,
  });
}

/**
 * The managed-sandbox runtime when the operator enables it, `undefined` otherwise (the gate then
 * stays closed). Readiness is a cached probe that runs a real sandboxed command.
 */
export function createSandboxRuntime(
  config: Config,
  options: {
    logger: Logger;
    db: Kysely<DatabaseSchema>;
    metrics?: HttpMetrics;
    authorize?: ToolAuthorizer;
    backend?: SandboxBackend;
    /** The resolver the egress proxy looks names up with (default: the host's). */
    resolve?: ResolveAll;
    /**
     * Where sandbox usage goes (CPU, memory, disk); none is metered without it. A backend passed
     * in gets no last reading before its sandboxes stop unless built with the meter's `billReading`.
     */
    usage?: UsageSink;
  },
): SandboxRuntime | undefined {
  if (!config.sandbox.enabled) return undefined;
  if (config.sandbox.weakLimits) {
    options.logger.warn(
      { backend: config.sandbox.backend },
      'MORDN_SANDBOX_WEAK_LIMITS=true: where the host cannot hold per-workspace cgroups and quota filesystems, sandboxes run with per-process limits only (memory, processes and disk are not bounded for the sandbox as a whole)',
    );
  }
  const metrics = options.metrics;
  const egress = createEgressProxy({
    db: options.db,
    config: config.sandbox.egress,
    logger: options.logger,
    ...(metrics ? { observe: (decision, reason) => metrics.observeEgress(decision, reason) } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.usage ? { usage: options.usage } : {}),
  });
  // The backend hands its sandboxes' last readings to the meter, which reads the backend.
  let meter: SandboxMeter | undefined;
  const backend =
    options.backend ??
    createBackend(
      config,
      options.logger,
      (workspaceId, tunnel) => egress.serve(workspaceId, tunnel),
      async (workspaceId, resources) => meter?.billReading(workspaceId, resources),
    );
  if (options.usage) {
    meter = createSandboxMeter({
      db: options.db,
      backend,
      sink: options.usage,
      logger: options.logger,
      sampleSeconds: config.sandbox.usageSampleSeconds,
      // A busy workspace is read at most every 2 s after its calls; the sampler and the last
      // reading before a stop bill the rest.
      callReadingIntervalMs: 2_000,
    });
  }
  const probe = createCachedProbe(() => backend.probe(), { ttlMs: PROBE_TTL_MS, logger: options.logger });
  return {
    backend,
    isReady: () => probe.isReady(),
    problem: () => probe.problem(),
    ...(options.authorize ? { authorize: options.authorize } : {}),
    egress,
    ...(meter ? { meter } : {}),
  };
}
