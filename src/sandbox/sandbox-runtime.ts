import type { SandboxMeter } from '../usage/sandbox-meter.js';
import type { SandboxBackend } from './backend.js';
import type { EgressProxy } from './egress/egress-proxy.js';
import type { ToolAuthorizer } from './execution-policy.js';

/**
 * The managed-sandbox runtime the service runs tool calls on: the backend with its cached
 * readiness and the operator's custom authorization hook. Built by `createSandboxRuntime`, held in
 * the app's dependencies while the operator enables sandboxes.
 */
export interface SandboxRuntime {
  backend: SandboxBackend;
  /** Cached readiness (see `createCachedProbe`): never provisions anything. */
  isReady(): Promise<boolean>;
  /** Why the backend is not ready, when known (shown by `/readyz`: host capabilities, never secrets). */
  problem?(): string | undefined;
  /** Runs before every tool call, after the allow-list; a throw or `false` denies (fail closed). */
  authorize?: ToolAuthorizer;
  /** The policy proxy, every sandbox's only way out (see `createEgressProxy`). */
  egress?: EgressProxy;
  /** Meters what the sandboxes use (CPU, memory, disk), when usage is recorded. */
  meter?: SandboxMeter;
}
