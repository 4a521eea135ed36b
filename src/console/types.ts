/** The admin API's shapes the console reads (see openapi/openapi.json). */

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface ConsoleSession {
  sessionId: string;
  csrfToken: string;
  expiresAt: string;
}

export interface TenantRecord {
  id: string;
  name: string;
  createdAt: string;
}

export interface AgentRecord {
  id: string;
  tenantId: string;
  name: string;
  createdAt: string;
}

export type Permission = 'read' | 'write';

export interface ApiKeyItem {
  id: string;
  permissions: Permission[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface CreatedApiKey {
  id: string;
  key: string;
  permissions: Permission[];
}

/** An agent configuration. Fields the console does not edit are kept exactly as they were. */
export interface AgentConfig {
  schemaVersion: 1;
  model?: string;
  instructions?: string;
  attachments?: { enabled?: boolean; accept?: string[]; maxBytes?: number };
  runtime?: { sandbox?: { enabled: boolean; network?: NetworkPolicy } };
  [field: string]: unknown;
}

export type NetworkMode = 'none' | 'packages' | 'allowlist';

/** `runtime.sandbox.network`: what a workspace's code may reach (absent means `none`). */
export type NetworkPolicy = { mode: 'none' } | { mode: 'packages' } | { mode: 'allowlist'; allow: string[] };

export interface AgentConfigState {
  draft: AgentConfig | null;
  published: AgentConfig | null;
}

export interface AgentWorkspace {
  id: string;
  userId: string;
  backend: string;
  /** As last measured by a file tool (0 until one did). */
  bytesUsed: number;
  /** Always null in a listing: the service counts no files there, so the console shows none. */
  fileCount: number | null;
  lastUsedAt: string;
  deleteAfter: string | null;
}

export type EraseKind = 'uploads' | 'artifacts' | 'chats';

export interface ErasureCounts {
  workspaces: number;
  /** The egress proxy's records of the workspace's connections: erased with it, always. */
  egressDecisions: number;
  uploads: number;
  artifacts: number;
  chats: number;
}

export interface ErasureReport {
  dryRun: boolean;
  counts: ErasureCounts;
  remaining: ErasureCounts;
  status: 'complete' | 'partial';
}

export interface TenantUsage {
  tenantId: string;
  from: string;
  to: string;
  toolCalls: number;
  execSeconds: number;
  bytesStored: number;
  chats: number;
  downloads: number;
}

export interface AdminAuditEntry {
  id: string;
  at: string;
  actor: string;
  method: string;
  route: string;
  target: Record<string, string>;
  requestId: string;
  status: number;
  outcome: 'ok' | 'failed';
}

export type EgressReason = 'policy' | 'egress_off' | 'private_address' | 'port' | 'method' | 'limit' | 'resolve_failed';

/** One decision of the sandbox egress proxy (`GET /v1/admin/tenants/:tenantId/egress`). */
export interface EgressDecision {
  at: string;
  agentId: string;
  userId: string;
  workspaceId: string;
  host: string;
  port: number;
  address: string | null;
  decision: 'allowed' | 'refused';
  reason: EgressReason | null;
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
  count: number;
}

/** The operator's ceiling on sandbox network access. */
export interface EgressCeiling {
  enabled: boolean;
  /** The only tenants egress opens for; null for every tenant. */
  tenants: string[] | null;
  packageIndexUrl: string;
  ports: number[];
  maxConnections: number;
  bytesPerDay: number;
}

export type CheckResult = 'ok' | 'failed' | 'timeout';

export interface ConsoleStatus {
  version: string;
  readiness: {
    status: 'ready' | 'unavailable' | 'draining';
    checks: Record<string, CheckResult>;
    reasons?: Record<string, string>;
  };
  sandbox: { operatorEnabled: boolean; backend: string | null; containment: string | null; egress: EgressCeiling };
  storage: { driver: string };
  database: { dialect: string };
  model: { configured: boolean; provider: string | null; modelId: string | null };
}

/** How `GET /v1/admin/usage` groups its rows; absent, one row per tenant. */
export type UsageGroupBy = 'day' | 'agent' | 'user';

/** One row of `GET /v1/admin/usage`: the metered counters of one tenant (and agent, user or UTC day). */
export interface UsageRow {
  tenantId: string;
  agentId?: string;
  userId?: string;
  /** `YYYY-MM-DD` (UTC), with `groupBy=day`. */
  day?: string;
  inputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  cachedInputTokens: number;
  turns: number;
  /** Turns whose model reported no token usage: token limits cannot count them. */
  turnsWithoutUsage: number;
  toolCalls: number;
  sandboxCpuSeconds: number;
  sandboxMemoryGibSeconds: number;
  diskGibHours: number;
  artifactBytesPublished: number;
  artifactBytesDownloaded: number;
  egressBytes: number;
}

/** A tenant's or agent's limits: each a whole number ≥ 0, or null for unlimited (0 refuses everything). */
export interface Limits {
  tokensPerDay: number | null;
  tokensPerMonth: number | null;
  sandboxCpuSecondsPerDay: number | null;
  storageBytes: number | null;
}
