import type { Generated } from 'kysely';

/**
 * Row types of every table, as Kysely sees them. Timestamps are epoch milliseconds (`bigint`
 * columns, read back as numbers on both dialects); JSON documents are stored as text.
 */
export interface TenantsTable {
  id: string;
  name: string;
  created_at: number;
}

export interface AgentsTable {
  id: string;
  tenant_id: string;
  name: string;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  /** SHA-256 (hex) of the whole key; the key itself is never stored. */
  key_hash: string;
  /** The first characters of the key, for recognising it in listings. */
  key_prefix: string;
  /** Comma-separated subset of `read,write`. */
  permissions: string;
  created_at: number;
  revoked_at: number | null;
  /** When the key last authenticated a request, to the minute (see `recordApiKeyUse`); null if never. */
  last_used_at: number | null;
}

export interface AgentConfigsTable {
  agent_id: string;
  draft: string | null;
  draft_updated_at: number | null;
  published: string | null;
  published_at: number | null;
  /** Incremented by every publish; 0 while nothing has been published. */
  published_version: Generated<number>;
}

export interface StoredFilesTable {
  storage_path: string;
  tenant_id: string;
  agent_id: string;
  user_id: string;
  /** `upload` or `artifact`. */
  kind: string;
  filename: string;
  media_type: string;
  size: number;
  sha256: string;
  created_at: number;
  /** When the artifact was revoked (its links fail until restored); null while active. */
  revoked_at: number | null;
}

export interface ArtifactDownloadsTable {
  id: string;
  storage_path: string;
  tenant_id: string;
  agent_id: string;
  /** The user the link was minted for: the artifact's owner. */
  user_id: string;
  downloaded_at: number;
  client_ip: string | null;
  user_agent: string | null;
  /** 200 streamed to the end, 499 the client left mid-stream, 302 redirected (S3), 404 revoked. */
  status: number;
  /** Bytes sent, when the service streamed them; null for a redirect or a refusal. */
  bytes: number | null;
}

export interface WorkspacesTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  user_id: string;
  backend: string;
  placement: string | null;
  created_at: number;
  last_used_at: number;
  bytes: Generated<number>;
  /** Bumped to serialise lease decisions on this workspace across replicas. */
  lease_epoch: Generated<number>;
  /** The sandbox instance whose CPU counter `meter_cpu_micros` was read from (null: none yet). */
  meter_instance: string | null;
  /** When that instance started (epoch ms); a reading of an older instance is stale. */
  meter_started_at: Generated<number>;
  /** The last cumulative CPU reading billed, in microseconds. */
  meter_cpu_micros: Generated<number>;
  /** Start (epoch ms) of the last memory sampling interval billed. */
  meter_memory_sampled_at: Generated<number>;
  /** Start (epoch ms) of the last disk sampling interval billed. */
  meter_disk_sampled_at: Generated<number>;
}

export interface WorkspaceLeasesTable {
  id: string;
  workspace_id: string;
  expires_at: number;
}

export interface RateLimitWindowsTable {
  key: string;
  window_start: number;
  count: number;
}

export interface ChatsTable {
  tenant_id: string;
  agent_id: string;
  user_id: string;
  chat_id: string;
  /** JSON array of UI messages. */
  messages: string;
  created_at: number;
  updated_at: number;
}

/** A signed-in web console session; the cookie carries the secret, the row only its SHA-256. */
export interface ConsoleSessionsTable {
  /** `cs_…`: named in the audit log (`console:<id>`) and in the preview user `console-preview:<id>`. */
  id: string;
  secret_hash: string;
  created_at: number;
  expires_at: number;
}

export interface SandboxTokensTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  user_id: string;
  /** The agent key that minted the token: revoking or deleting it ends the token too. */
  api_key_id: string | null;
  /** Or the console session whose preview chat it serves: signing out ends the token. */
  console_session_id: string | null;
  /** SHA-256 (hex) of the whole token; the token itself is never stored. */
  token_hash: string;
  /** The MCP endpoint the token was minted for (`${MORDN_PUBLIC_URL}/v1/sandbox/mcp`). */
  audience: string;
  /** Comma-separated: `read` or `read,write`. */
  permissions: string;
  /** JSON array of tool names, or null for all six. */
  tools: string | null;
  expires_at: number;
  revoked_at: number | null;
  created_at: number;
}

/** One admin write, appended after it was answered; never updated (see `src/admin/audit-log.ts`). */
export interface AdminAuditTable {
  id: string;
  at: number;
  /** `admin:` + 12 hex of sha256(admin token), or `console:<session id>`. */
  actor: string;
  method: string;
  /** The matched route pattern (`/v1/admin/agents/:agentId/keys`), never the raw URL. */
  route: string;
  /** JSON object of the path parameters. */
  target: string;
  request_id: string;
  status: number;
  /** `ok` for a 1xx–3xx answer, `failed` otherwise. */
  outcome: string;
}

/** One decision of the sandbox egress proxy (see `src/sandbox/egress/egress-log.ts`). */
export interface EgressLogTable {
  id: string;
  at: number;
  tenant_id: string;
  agent_id: string;
  user_id: string;
  workspace_id: string;
  /** As the client asked for it (normalised when it was a valid name or literal). */
  host: string;
  port: number;
  /** The checked address connected to, or the refused one; null when refused before resolving. */
  address: string | null;
  /** `allowed` or `refused`. */
  decision: string;
  /** Why it was refused; null when allowed. */
  reason: string | null;
  bytes_up: Generated<number>;
  bytes_down: Generated<number>;
  duration_ms: Generated<number>;
  /** Identical refusals within seconds of each other share one row. */
  count: Generated<number>;
}

/** Bytes a workspace moved through the egress proxy on one UTC day (`YYYY-MM-DD`). */
export interface EgressUsageTable {
  workspace_id: string;
  day: string;
  bytes: Generated<number>;
}

/** Metered usage of one tenant, agent, user and UTC day (`YYYY-MM-DD`); every counter only grows. */
export interface UsageDailyTable {
  tenant_id: string;
  agent_id: string;
  user_id: string;
  day: string;
  input_tokens: Generated<number>;
  output_tokens: Generated<number>;
  reasoning_tokens: Generated<number>;
  cached_input_tokens: Generated<number>;
  turns: Generated<number>;
  turns_without_usage: Generated<number>;
  tool_calls: Generated<number>;
  sandbox_cpu_seconds: Generated<number>;
  sandbox_memory_gib_seconds: Generated<number>;
  disk_gib_hours: Generated<number>;
  artifact_bytes_published: Generated<number>;
  artifact_bytes_downloaded: Generated<number>;
  egress_bytes: Generated<number>;
}

/** The tool calls of one tenant, agent, user and UTC day, by tool and outcome (`ok` | `failed`). */
export interface UsageToolCallsTable {
  tenant_id: string;
  agent_id: string;
  user_id: string;
  day: string;
  tool: string;
  outcome: string;
  calls: Generated<number>;
}

/** The limits of a tenant or an agent (`scope`); null is unlimited. */
export interface UsageLimitsTable {
  scope: string;
  scope_id: string;
  tokens_per_day: number | null;
  tokens_per_month: number | null;
  sandbox_cpu_seconds_per_day: number | null;
  storage_bytes: number | null;
  updated_at: number;
}

/** One sandbox tool call that ran (after admission), for per-tenant usage. */
export interface ToolCallsTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  user_id: string;
  tool: string;
  started_at: number;
  /** Wall-clock time the call took in its workspace. */
  duration_ms: number;
  /** `ok`, or `failed` when the tool answered an error. */
  outcome: string;
}

/** One answer of a chat while it runs, and for a minute after it is stored (see `createDatabaseAnswerStore`). */
export interface ChatAnswersTable {
  answer_id: string;
  /** The key's scope: `tenant/agent` in the service. */
  space: string;
  user_id: string;
  chat_id: string;
  /** The user message the answer answers. */
  user_message_id: string;
  /** `running` or `done`. */
  status: string;
  /** The process running it; its lease runs until `lease_until`. */
  owner: string;
  lease_until: number;
  stop_requested: Generated<number>;
  /** When a reader on another process last said it is attached. */
  reader_seen_at: Generated<number>;
  /** 1 once the log passed its bound: new readers are told the answer is too long to resume. */
  overflow: Generated<number>;
  started_at: number;
  finished_at: number | null;
}

/** A batch of an answer's chunk log: `count` chunks from `first_seq`, their JSON joined by newlines. */
export interface ChatAnswerChunksTable {
  answer_id: string;
  first_seq: number;
  count: number;
  data: string;
}

export interface DatabaseSchema {
  tenants: TenantsTable;
  agents: AgentsTable;
  api_keys: ApiKeysTable;
  agent_configs: AgentConfigsTable;
  stored_files: StoredFilesTable;
  workspaces: WorkspacesTable;
  workspace_leases: WorkspaceLeasesTable;
  rate_limit_windows: RateLimitWindowsTable;
  chats: ChatsTable;
  chat_answers: ChatAnswersTable;
  chat_answer_chunks: ChatAnswerChunksTable;
  sandbox_tokens: SandboxTokensTable;
  console_sessions: ConsoleSessionsTable;
  artifact_downloads: ArtifactDownloadsTable;
  admin_audit: AdminAuditTable;
  tool_calls: ToolCallsTable;
  egress_log: EgressLogTable;
  egress_usage: EgressUsageTable;
  usage_daily: UsageDailyTable;
  usage_tool_calls: UsageToolCallsTable;
  usage_limits: UsageLimitsTable;
}
