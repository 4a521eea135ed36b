import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { type HostRule, parseHostRule } from './host-rules.js';
import {
  ALL_UPLOAD_TYPES,
  DEFAULT_UPLOAD_MAX_BYTES,
  isUploadMediaType,
  MANAGED_UPLOAD_MAX_BYTES,
  type UploadMediaType,
} from './media-types.js';
import { SANDBOX_TOOL_NAMES, type SandboxToolName } from './sandbox-tool-names.js';
import { defaultMaxFiles } from './workspace-file-defaults.js';

/** Model providers the service can drive; the id after the colon is passed to the provider. */
export type ModelProvider = 'openai' | 'anthropic' | 'openai-compatible';

export interface ModelConfig {
  provider: ModelProvider;
  modelId: string;
  /** Required for `openai-compatible` (Ollama, vLLM, LM Studio, OpenRouter…). */
  baseUrl?: string;
  apiKey?: string;
}

export type DatabaseConfig = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };

export type StorageConfig =
  | { kind: 'fs' }
  | {
      kind: 's3';
      bucket: string;
      region: string;
      endpoint?: string;
      /** Origin signed download URLs use, when browsers reach the store elsewhere than the service. */
      publicEndpoint?: string;
      forcePathStyle: boolean;
      /** How long a request to the store may stay silent (connecting, or between bytes) before it fails. */
      timeoutMs: number;
      /** When the SDK checksums requests and responses: only where required (S3-compatible stores) or wherever supported. */
      checksums: 'when_required' | 'when_supported';
    };

// The tool-name table lives below the configuration, so host bundles can take it without this module.
export { SANDBOX_TOOL_NAMES, type SandboxToolName } from './sandbox-tool-names.js';

/** Operator policy for managed sandboxes. Every limit can only be lowered from its ceiling. */
export interface SandboxConfig {
  /** The operator switch: nothing opens without it. */
  enabled: boolean;
  backend: 'bwrap' | 'docker';
  /** When set, only these tenants may use sandboxes. */
  allowedTenants?: string[];
  /** When set, only these tools may run (the execution policy's allow-list). */
  allowedTools?: SandboxToolName[];
  /** Default and maximum `sandbox_exec` timeout (the maximum is at most 120 s). */
  execTimeoutSeconds: number;
  maxExecTimeoutSeconds: number;
  /** Bytes of tool output per response (at most 1 MiB). */
  maxOutputBytes: number;
  /** Bytes a workspace may hold: the size of its own filesystem (writes past it get ENOSPC). */
  workspaceMaxBytes: number;
  /** Files (inodes) a workspace may hold. */
  workspaceMaxFiles: number;
  /** Idle days after which a workspace is deleted; 0 keeps workspaces forever. */
  retentionDays: number;
  /** Concurrent tool calls per workspace. */
  maxConcurrentCalls: number;
  /** Tool calls per user per minute. */
  callsPerMinute: number;
  /** Extra patterns redacted from every tool result (regular expressions). */
  redactPatterns: RegExp[];
  /** Memory of all of a workspace's processes together, and their process count. */
  memoryBytes: number;
  processes: number;
  /** Size of each workspace's /tmp (a tmpfs, charged to its memory). */
  tmpBytes: number;
  /** CPUs per workspace (a quota of all its processes together; fractions allowed). */
  cpus: number;
  /** A workspace sandbox idle this long is stopped (its files are kept). */
  idleSeconds: number;
  /** How often sandbox memory and workspace disk are sampled for usage (`MORDN_USAGE_SAMPLE_SECONDS`). */
  usageSampleSeconds: number;
  /** The longest lifetime a per-user MCP token may be minted with (60 s to 24 h). */
  tokenMaxSeconds: number;
  /** bwrap: sandboxes kept running over empty filesystems for new workspaces' first calls; 0 keeps none. */
  warmSandboxes: number;
  /** Where the cgroup filesystems are mounted; workspace cgroups go below the service's own. */
  cgroupRoot: string;
  /** Run even where the host cannot hold cgroup and quota limits (per-process limits instead). */
  weakLimits: boolean;
  /** What may leave a workspace sandbox, and only through the service's policy proxy. */
  egress: EgressConfig;
  /** The `docker` backend: where the Engine API is and what each workspace container gets. */
  docker: {
    /** `unix:///path/to/docker.sock` or `tcp://host:port` / `http://host:port` (a socket proxy). */
    host: string;
    image: string;
    /** The OCI runtime of workspace containers: `runc` (Docker's default) or `runsc` (gVisor). */
    runtime: 'runc' | 'runsc';
  };
}

/**
 * The operator's ceiling on sandbox egress. Nothing leaves any sandbox unless `enabled` and the
 * tenant is allowed, and then only what the agent's published network policy names.
 */
export interface EgressConfig {
  /** `MORDN_SANDBOX_EGRESS=on`. */
  enabled: boolean;
  /** When set, only these tenants' agents may open egress. */
  allowedTenants?: string[];
  /** The Python package index `packages` mode opens (a PEP 503 `/simple/` URL). */
  packageIndexUrl: string;
  /** Further `host[:port]` entries the index needs (its file host, a CDN). */
  packageIndexHosts: HostRule[];
  /** Refused addresses that may be reached after all (an internal mirror). */
  privateCidrs: Cidr[];
  /** The only ports any connection may use. */
  ports: number[];
  /** Connections a workspace may have open at once. */
  maxConnections: number;
  /** Bytes (both directions) a workspace may move per UTC day, counted across replicas. */
  bytesPerDay: number;
  /** A connection that moves nothing for this long is closed. */
  idleSeconds: number;
  /** Bytes a second a workspace's connections move at most, both ways together. */
  bytesPerSecond: number;
  /** Days the egress decisions are kept. */
  logRetentionDays: number;
}

/** The public Python package index, and the host its files are served from. */
export const DEFAULT_PACKAGE_INDEX_URL = 'https://pypi.org/simple/';
const DEFAULT_PACKAGE_INDEX_HOSTS = 'files.pythonhosted.org';

/** The operator's configuration, parsed once at start-up and passed to whatever needs it. */
export interface Config {
  port: number;
  host: string;
  /** Absolute path of the data directory (embedded database, local storage, workspaces). */
  dataDir: string;
  database: DatabaseConfig;
  storage: StorageConfig;
  /** Origin (no trailing slash) that signed `fs` download URLs use. */
  publicUrl: string;
  /**
   * HMAC key for `fs` download URLs. When unset the `fs` adapter creates one in the data dir;
   * replicas sharing a data dir (or a load balancer in front of several) must set it.
   */
  signingSecret?: string;
  /** Lifetime of signed download URLs (both adapters). */
  downloadUrlTtlSeconds: number;
  /** Days a published file's download records are kept; 0 keeps them forever. */
  downloadAuditRetentionDays: number;
  /** Days metered usage rows are kept (`MORDN_USAGE_RETENTION_DAYS`). */
  usageRetentionDays: number;
  /** Peers whose `X-Forwarded-For` names the client in the download audit; empty trusts none. */
  trustedProxies: Cidr[];
  /** Operator upload policy: may only lower the built-in ceilings and narrow the types. */
  uploads: {
    /** Ceiling for the default set (images, PDF): at most 5 MiB. */
    maxBytes: number;
    /** Ceiling for the managed document set: at most 10 MiB. */
    managedMaxBytes: number;
    /** When set, only these types are ever accepted (a subset of the built-in sets). */
    allowedTypes?: UploadMediaType[];
  };
  /** Bearer token for `/v1/admin/*`; the admin routes do not exist without it. */
  adminToken?: string;
  /** Bearer token `/metrics` requires when set; without it `/metrics` is open. */
  metricsToken?: string;
  model?: ModelConfig;
  sandbox: SandboxConfig;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** How long in-flight requests may run after SIGTERM/SIGINT before connections are cut. */
  shutdownTimeoutMs: number;
  /**
   * How long a client may keep a request waiting: its head must be complete within this, and an
   * upload body that sends nothing for this long is abandoned.
   */
  requestIdleTimeoutMs: number;
  /** Text deltas of one part that follow the last one sent within this many ms travel as one (0: each alone). */
  chatCoalesceMs: number;
  /** How long a resumable answer (`X-Chat-Resumable: 1`) keeps running after its last reader left. */
  chatDetachedGraceMs: number;
  /**
   * How other replicas hear of an answer's new chunks and stop requests: `listen` (PostgreSQL
   * `LISTEN/NOTIFY` on a dedicated connection) or `poll` (every 200 ms; for a pooler in
   * transaction mode, which breaks `LISTEN`).
   */
  chatFanout: 'listen' | 'poll';
  /** The bound of one answer's chunk log; past it, new readers are told it is too long to resume. */
  chatResumeMaxBytes: number;
  /** OpenTelemetry traces (see docs/tracing.md). */
  telemetry: TelemetryConfig;
  /** Every secret value found in the configuration, so logs and outputs can scrub them. */
  secretValues: string[];
}

/** OpenTelemetry traces: on when an OTLP endpoint is set, by the standard variables. */
export interface TelemetryConfig {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not true). */
  enabled: boolean;
  /** `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL` (default `http/protobuf`). */
  protocol: 'http/protobuf' | 'http/json';
  /** `MORDN_OTEL_CAPTURE_CONTENT`: spans carry prompts, tool arguments and results, commands. */
  captureContent: boolean;
}

/** Raised for invalid configuration; its message names every offending variable. */
export class ConfigError extends Error {
  readonly variables: string[];

  constructor(problems: Array<{ variable: string; message: string }>) {
    super(
      `Invalid configuration:\n${problems.map((problem) => `  ${problem.variable}: ${problem.message}`).join('\n')}`,
    );
    this.name = 'ConfigError';
    this.variables = problems.map((problem) => problem.variable);
  }
}

/** Environment variables holding secrets that may be present even though we only pass them on. */
const SECRET_VARIABLES = [
  'MORDN_ADMIN_TOKEN',
  'MORDN_METRICS_TOKEN',
  'MORDN_SIGNING_SECRET',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'MORDN_MODEL_API_KEY',
  'OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const booleanFlag = (fallback: boolean) =>
  optionalString.transform((value, context) => {
    if (value === undefined) return fallback;
    const normalized = value.toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
    if (['false', '0', 'no', 'off'].includes(normalized)) return false;
    context.addIssue({ code: 'custom', message: `must be true or false (got "${value}")` });
    return z.NEVER;
  });

const integer = (fallback: number, min: number, max: number) =>
  optionalString.transform((value, context) => {
    if (value === undefined) return fallback;
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      context.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max} (got "${value}")` });
      return z.NEVER;
    }
    return Number(value);
  });

const choice = <const Values extends readonly [string, ...string[]]>(values: Values, fallback: Values[number]) =>
  optionalString.transform((value, context): Values[number] => {
    if (value === undefined) return fallback;
    if ((values as readonly string[]).includes(value)) return value as Values[number];
    context.addIssue({ code: 'custom', message: `must be one of ${values.join(', ')} (got "${value}")` });
    return z.NEVER;
  });

const httpUrl = optionalString.transform((value, context) => {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    context.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL' });
    return z.NEVER;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    context.addIssue({ code: 'custom', message: 'must use http or https' });
    return z.NEVER;
  }
  return url;
});

const EnvironmentSchema = z.object({
  PORT: integer(8787, 0, 65535),
  HOST: optionalString.transform((value) => value ?? '127.0.0.1'),
  MORDN_DATA_DIR: optionalString.transform((value) => value ?? './data'),
  DATABASE_URL: optionalString,
  MORDN_STORAGE: choice(['fs', 's3'], 'fs'),
  S3_BUCKET: optionalString,
  S3_REGION: optionalString.transform((value) => value ?? 'us-east-1'),
  S3_ENDPOINT: httpUrl,
  S3_FORCE_PATH_STYLE: booleanFlag(false),
  S3_PUBLIC_ENDPOINT: httpUrl,
  S3_TIMEOUT_MS: integer(30_000, 100, 600_000),
  S3_REQUEST_CHECKSUMS: choice(['when_required', 'when_supported'], 'when_required'),
  MORDN_PUBLIC_URL: httpUrl,
  MORDN_SIGNING_SECRET: optionalString,
  MORDN_DOWNLOAD_URL_TTL_SECONDS: integer(900, 60, 3600),
  MORDN_DOWNLOAD_AUDIT_RETENTION_DAYS: integer(90, 0, 3650),
  MORDN_USAGE_RETENTION_DAYS: integer(400, 1, 3650),
  MORDN_TRUSTED_PROXIES: optionalString,
  MORDN_UPLOAD_MAX_BYTES: integer(DEFAULT_UPLOAD_MAX_BYTES, 1, DEFAULT_UPLOAD_MAX_BYTES),
  MORDN_MANAGED_UPLOAD_MAX_BYTES: integer(MANAGED_UPLOAD_MAX_BYTES, 1, MANAGED_UPLOAD_MAX_BYTES),
  MORDN_UPLOAD_TYPES: optionalString,
  MORDN_ADMIN_TOKEN: optionalString,
  MORDN_METRICS_TOKEN: optionalString,
  MORDN_MODEL: optionalString,
  MORDN_MODEL_BASE_URL: httpUrl,
  MORDN_MODEL_API_KEY: optionalString,
  MORDN_SANDBOX_ENABLED: booleanFlag(false),
  MORDN_SANDBOX_BACKEND: choice(['bwrap', 'docker'], 'bwrap'),
  MORDN_SANDBOX_TENANTS: optionalString,
  MORDN_SANDBOX_TOOLS: optionalString,
  MORDN_SANDBOX_EXEC_TIMEOUT_SECONDS: integer(30, 1, 120),
  MORDN_SANDBOX_MAX_EXEC_TIMEOUT_SECONDS: integer(120, 1, 120),
  MORDN_SANDBOX_MAX_OUTPUT_BYTES: integer(1024 * 1024, 1024, 1024 * 1024),
  MORDN_SANDBOX_WORKSPACE_MAX_BYTES: integer(1024 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024 * 1024),
  MORDN_SANDBOX_RETENTION_DAYS: integer(30, 0, 3650),
  MORDN_SANDBOX_MAX_CONCURRENT_CALLS: integer(2, 1, 64),
  MORDN_SANDBOX_CALLS_PER_MINUTE: integer(60, 1, 10_000),
  MORDN_SANDBOX_REDACT_PATTERNS: optionalString,
  MORDN_SANDBOX_MEMORY_BYTES: integer(2 * 1024 * 1024 * 1024, 64 * 1024 * 1024, 64 * 1024 * 1024 * 1024),
  MORDN_SANDBOX_PROCESSES: integer(256, 8, 4096),
  MORDN_SANDBOX_TMP_BYTES: integer(64 * 1024 * 1024, 1024 * 1024, 4 * 1024 * 1024 * 1024),
  MORDN_DOCKER_HOST: optionalString.transform((value) => value ?? 'unix:///var/run/docker.sock'),
  MORDN_SANDBOX_IMAGE: optionalString.transform((value) => value ?? 'mordn-sandbox:latest'),
  MORDN_SANDBOX_CPUS: optionalString.transform((value, context) => {
    if (value === undefined) return 1;
    const cpus = Number(value);
    if (!/^\d+(\.\d+)?$/.test(value) || cpus < 0.01 || cpus > 64) {
      context.addIssue({ code: 'custom', message: `must be a number of CPUs from 0.01 to 64 (got "${value}")` });
      return z.NEVER;
    }
    return cpus;
  }),
  MORDN_SANDBOX_IDLE_SECONDS: integer(300, 10, 86_400),
  MORDN_USAGE_SAMPLE_SECONDS: integer(60, 5, 3600),
  MORDN_SANDBOX_WARM_SANDBOXES: integer(2, 0, 64),
  MORDN_SANDBOX_TOKEN_MAX_SECONDS: integer(3600, 60, 86_400),
  MORDN_SANDBOX_EGRESS: choice(['off', 'on'], 'off'),
  MORDN_SANDBOX_EGRESS_TENANTS: optionalString,
  MORDN_SANDBOX_PACKAGE_INDEX_URL: httpUrl,
  MORDN_SANDBOX_PACKAGE_INDEX_HOSTS: optionalString,
  MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: optionalString,
  MORDN_SANDBOX_EGRESS_PORTS: optionalString,
  MORDN_SANDBOX_EGRESS_MAX_CONNECTIONS: integer(16, 1, 1024),
  MORDN_SANDBOX_EGRESS_BYTES_PER_DAY: integer(1024 ** 3, 1024, 1024 ** 5),
  MORDN_SANDBOX_EGRESS_IDLE_SECONDS: integer(60, 1, 3600),
  MORDN_SANDBOX_EGRESS_BYTES_PER_SECOND: integer(100 * 1024 ** 2, 64 * 1024, 10 * 1024 ** 3),
  MORDN_SANDBOX_EGRESS_LOG_RETENTION_DAYS: integer(30, 0, 3650),
  MORDN_SANDBOX_WORKSPACE_MAX_FILES: optionalString,
  MORDN_SANDBOX_CGROUP_ROOT: optionalString.transform((value) => value ?? '/sys/fs/cgroup'),
  MORDN_SANDBOX_WEAK_LIMITS: booleanFlag(false),
  MORDN_SANDBOX_RUNTIME: choice(['runc', 'runsc'], 'runc'),
  MORDN_LOG_LEVEL: choice(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  MORDN_SHUTDOWN_TIMEOUT_MS: integer(10_000, 0, 600_000),
  // At most Node's 300 s whole-request timeout, which a request head must also fit within.
  MORDN_REQUEST_IDLE_TIMEOUT_MS: integer(30_000, 100, 300_000),
  MORDN_CHAT_COALESCE_MS: integer(10, 0, 1_000),
  MORDN_CHAT_DETACHED_GRACE_SECONDS: integer(30, 0, 1_800),
  MORDN_CHAT_FANOUT: choice(['listen', 'poll'], 'listen'),
  MORDN_CHAT_RESUME_MAX_BYTES: integer(16 * 1024 ** 2, 64 * 1024, 256 * 1024 ** 2),
  MORDN_OTEL_CAPTURE_CONTENT: booleanFlag(false),
  OTEL_SDK_DISABLED: optionalString,
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString,
  OTEL_EXPORTER_OTLP_PROTOCOL: optionalString,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optionalString,
});

type Environment = z.output<typeof EnvironmentSchema>;
type Problem = { variable: string; message: string };

function parseDatabase(environment: Environment, dataDir: string, problems: Problem[]): DatabaseConfig {
  const url = environment.DATABASE_URL;
  if (url === undefined) return { kind: 'sqlite', file: path.join(dataDir, 'mordn.db') };
  if (!/^postgres(ql)?:\/\//.test(url)) {
    problems.push({ variable: 'DATABASE_URL', message: 'must be a postgres:// or postgresql:// URL' });
  }
  return { kind: 'postgres', url };
}

function parseStorage(environment: Environment, problems: Problem[]): StorageConfig {
  if (environment.MORDN_STORAGE === 'fs') return { kind: 'fs' };
  if (environment.S3_BUCKET === undefined) {
    problems.push({ variable: 'S3_BUCKET', message: 'is required when MORDN_STORAGE=s3' });
  }
  return {
    kind: 's3',
    bucket: environment.S3_BUCKET ?? '',
    region: environment.S3_REGION,
    ...(environment.S3_ENDPOINT ? { endpoint: environment.S3_ENDPOINT.origin } : {}),
    ...(environment.S3_PUBLIC_ENDPOINT ? { publicEndpoint: environment.S3_PUBLIC_ENDPOINT.origin } : {}),
    forcePathStyle: environment.S3_FORCE_PATH_STYLE,
    timeoutMs: environment.S3_TIMEOUT_MS,
    checksums: environment.S3_REQUEST_CHECKSUMS,
  };
}

function parseModel(environment: Environment, problems: Problem[]): ModelConfig | undefined {
  const spec = environment.MORDN_MODEL;
  if (spec === undefined) return undefined;
  const match = /^(openai|anthropic|openai-compatible):(.+)$/.exec(spec);
  if (!match) {
    problems.push({
      variable: 'MORDN_MODEL',
      message: `must be openai:<id>, anthropic:<id> or openai-compatible:<id> (got "${spec}")`,
    });
    return undefined;
  }
  const provider = match[1] as ModelProvider;
  const baseUrl = environment.MORDN_MODEL_BASE_URL?.href.replace(/\/$/, '');
  if (provider === 'openai-compatible' && baseUrl === undefined) {
    problems.push({ variable: 'MORDN_MODEL_BASE_URL', message: 'is required for an openai-compatible model' });
  }
  return {
    provider,
    modelId: match[2] as string,
    ...(baseUrl ? { baseUrl } : {}),
    ...(environment.MORDN_MODEL_API_KEY ? { apiKey: environment.MORDN_MODEL_API_KEY } : {}),
  };
}

function parseUploadTypes(environment: Environment, problems: Problem[]): UploadMediaType[] | undefined {
  const list = environment.MORDN_UPLOAD_TYPES;
  if (list === undefined) return undefined;
  const types = list
    .split(',')
    .map((type) => type.trim().toLowerCase())
    .filter(Boolean);
  const unknown = types.filter((type) => !isUploadMediaType(type));
  if (unknown.length > 0 || types.length === 0) {
    problems.push({
      variable: 'MORDN_UPLOAD_TYPES',
      message: `must list types from ${ALL_UPLOAD_TYPES.join(', ')} (unknown: ${unknown.join(', ') || 'none given'})`,
    });
    return undefined;
  }
  return [...new Set(types)] as UploadMediaType[];
}

function parseList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  return items.length > 0 ? [...new Set(items)] : undefined;
}

function parseSandbox(environment: Environment, problems: Problem[]): SandboxConfig {
  const tools = parseList(environment.MORDN_SANDBOX_TOOLS);
  const unknownTools = tools?.filter((tool) => !(SANDBOX_TOOL_NAMES as readonly string[]).includes(tool)) ?? [];
  if (unknownTools.length > 0) {
    problems.push({
      variable: 'MORDN_SANDBOX_TOOLS',
      message: `must list tools from ${SANDBOX_TOOL_NAMES.join(', ')} (unknown: ${unknownTools.join(', ')})`,
    });
  }
  let redactPatterns: RegExp[] = [];
  if (environment.MORDN_SANDBOX_REDACT_PATTERNS !== undefined) {
    try {
      const patterns: unknown = JSON.parse(environment.MORDN_SANDBOX_REDACT_PATTERNS);
      if (!Array.isArray(patterns) || !patterns.every((pattern) => typeof pattern === 'string' && pattern !== '')) {
        throw new Error('not an array of strings');
      }
      redactPatterns = patterns.map((pattern: string) => new RegExp(pattern, 'g'));
    } catch {
      problems.push({
        variable: 'MORDN_SANDBOX_REDACT_PATTERNS',
        message: 'must be a JSON array of regular expressions, e.g. ["sk-[A-Za-z0-9]{20,}"]',
      });
    }
  }
  const maxExecTimeoutSeconds = environment.MORDN_SANDBOX_MAX_EXEC_TIMEOUT_SECONDS;
  return {
    enabled: environment.MORDN_SANDBOX_ENABLED,
    backend: environment.MORDN_SANDBOX_BACKEND,
    ...(environment.MORDN_SANDBOX_TENANTS !== undefined
      ? { allowedTenants: parseList(environment.MORDN_SANDBOX_TENANTS) ?? [] }
      : {}),
    ...(tools && unknownTools.length === 0 ? { allowedTools: tools as SandboxToolName[] } : {}),
    execTimeoutSeconds: Math.min(environment.MORDN_SANDBOX_EXEC_TIMEOUT_SECONDS, maxExecTimeoutSeconds),
    maxExecTimeoutSeconds,
    maxOutputBytes: environment.MORDN_SANDBOX_MAX_OUTPUT_BYTES,
    workspaceMaxBytes: environment.MORDN_SANDBOX_WORKSPACE_MAX_BYTES,
    retentionDays: environment.MORDN_SANDBOX_RETENTION_DAYS,
    maxConcurrentCalls: environment.MORDN_SANDBOX_MAX_CONCURRENT_CALLS,
    callsPerMinute: environment.MORDN_SANDBOX_CALLS_PER_MINUTE,
    redactPatterns,
    memoryBytes: environment.MORDN_SANDBOX_MEMORY_BYTES,
    processes: environment.MORDN_SANDBOX_PROCESSES,
    tmpBytes: environment.MORDN_SANDBOX_TMP_BYTES,
    cpus: environment.MORDN_SANDBOX_CPUS,
    idleSeconds: environment.MORDN_SANDBOX_IDLE_SECONDS,
    usageSampleSeconds: environment.MORDN_USAGE_SAMPLE_SECONDS,
    warmSandboxes: environment.MORDN_SANDBOX_WARM_SANDBOXES,
    tokenMaxSeconds: environment.MORDN_SANDBOX_TOKEN_MAX_SECONDS,
    workspaceMaxFiles: parseMaxFiles(environment, problems),
    cgroupRoot: parseCgroupRoot(environment.MORDN_SANDBOX_CGROUP_ROOT, problems),
    weakLimits: environment.MORDN_SANDBOX_WEAK_LIMITS,
    egress: parseEgress(environment, problems),
    docker: {
      host: parseDockerHost(environment.MORDN_DOCKER_HOST, problems),
      image: environment.MORDN_SANDBOX_IMAGE,
      runtime: environment.MORDN_SANDBOX_RUNTIME,
    },
  };
}

/** A comma-separated list parsed entry by entry; each bad entry is named in one problem. */
function parseEntries<T>(
  variable: string,
  value: string | undefined,
  parse: (entry: string) => T | undefined,
  expected: string,
  problems: Problem[],
): T[] {
  const entries = parseList(value) ?? [];
  const parsed = entries.map((entry) => ({ entry, value: parse(entry) }));
  const invalid = parsed.filter((item) => item.value === undefined).map((item) => `"${item.entry}"`);
  if (invalid.length > 0) problems.push({ variable, message: `must be ${expected} (not ${invalid.join(', ')})` });
  return parsed.flatMap((item) => (item.value === undefined ? [] : [item.value]));
}

function parseEgress(environment: Environment, problems: Problem[]): EgressConfig {
  const ports = parseEntries(
    'MORDN_SANDBOX_EGRESS_PORTS',
    environment.MORDN_SANDBOX_EGRESS_PORTS ?? '80,443',
    (entry) => (/^\d{1,5}$/.test(entry) && Number(entry) >= 1 && Number(entry) <= 65_535 ? Number(entry) : undefined),
    'a comma-separated list of ports from 1 to 65535, such as 80,443',
    problems,
  );
  const index = environment.MORDN_SANDBOX_PACKAGE_INDEX_URL;
  if (index && (index.username || index.password || index.search || index.hash)) {
    problems.push({
      variable: 'MORDN_SANDBOX_PACKAGE_INDEX_URL',
      message: 'must not contain credentials, a query or a fragment',
    });
  }
  const indexUrl = index?.href ?? DEFAULT_PACKAGE_INDEX_URL;
  const indexPort = Number(new URL(indexUrl).port || (indexUrl.startsWith('https:') ? 443 : 80));
  if (environment.MORDN_SANDBOX_EGRESS === 'on' && ports.length > 0 && !ports.includes(indexPort)) {
    problems.push({
      variable: 'MORDN_SANDBOX_PACKAGE_INDEX_URL',
      message: `uses port ${indexPort}, which MORDN_SANDBOX_EGRESS_PORTS does not list (${ports.join(',')})`,
    });
  }
  return {
    enabled: environment.MORDN_SANDBOX_EGRESS === 'on',
    ...(environment.MORDN_SANDBOX_EGRESS_TENANTS !== undefined
      ? { allowedTenants: parseList(environment.MORDN_SANDBOX_EGRESS_TENANTS) ?? [] }
      : {}),
    packageIndexUrl: indexUrl,
    packageIndexHosts: parseEntries(
      'MORDN_SANDBOX_PACKAGE_INDEX_HOSTS',
      environment.MORDN_SANDBOX_PACKAGE_INDEX_HOSTS ?? DEFAULT_PACKAGE_INDEX_HOSTS,
      (entry) => {
        const rule = parseHostRule(entry);
        return 'error' in rule ? undefined : rule;
      },
      'a comma-separated list of host[:port] entries, such as files.example.net:8443',
      problems,
    ),
    privateCidrs: parseEntries(
      'MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS',
      environment.MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS,
      parseCidr,
      'a comma-separated list of CIDRs such as 10.1.2.3/32,fd00::/8',
      problems,
    ),
    ports,
    maxConnections: environment.MORDN_SANDBOX_EGRESS_MAX_CONNECTIONS,
    bytesPerDay: environment.MORDN_SANDBOX_EGRESS_BYTES_PER_DAY,
    idleSeconds: environment.MORDN_SANDBOX_EGRESS_IDLE_SECONDS,
    bytesPerSecond: environment.MORDN_SANDBOX_EGRESS_BYTES_PER_SECOND,
    logRetentionDays: environment.MORDN_SANDBOX_EGRESS_LOG_RETENTION_DAYS,
  };
}

/** At most 2^32 − 1 inodes on ext4; the default grows with the quota (see `defaultMaxFiles`). */
function parseMaxFiles(environment: Environment, problems: Problem[]): number {
  const value = environment.MORDN_SANDBOX_WORKSPACE_MAX_FILES;
  if (value === undefined) return defaultMaxFiles(environment.MORDN_SANDBOX_WORKSPACE_MAX_BYTES);
  const files = Number(value);
  if (!/^\d+$/.test(value) || files < 16 || files > 100_000_000) {
    problems.push({
      variable: 'MORDN_SANDBOX_WORKSPACE_MAX_FILES',
      message: `must be a whole number of files from 16 to 100000000 (got "${value}")`,
    });
  }
  return files;
}

function parseCgroupRoot(value: string, problems: Problem[]): string {
  if (!path.isAbsolute(value)) {
    problems.push({ variable: 'MORDN_SANDBOX_CGROUP_ROOT', message: `must be an absolute path (got "${value}")` });
  }
  return value;
}

function parseDockerHost(value: string, problems: Problem[]): string {
  if (/^unix:\/\/\/.+/.test(value) || /^(tcp|http):\/\/[^/?#@]+\/?$/.test(value)) return value;
  problems.push({
    variable: 'MORDN_DOCKER_HOST',
    message: `must be unix:///path/to/docker.sock or tcp://host:port (got "${value}")`,
  });
  return value;
}

/** One `address/prefix` entry of `MORDN_TRUSTED_PROXIES`, normalised. */
export interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/**
 * Parses one CIDR (`10.0.0.0/8`, `::1/128`; a bare address means a single host). Returns
 * undefined for anything else, so configuration can name the offending entry.
 */
export function parseCidr(value: string): Cidr | undefined {
  const [address = '', prefixText, extra] = value.trim().split('/');
  if (extra !== undefined) return undefined;
  const version = isIP(address);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

function parseTrustedProxies(value: string | undefined, problems: Problem[]): Cidr[] {
  const entries = parseList(value) ?? [];
  const parsed = entries.map((entry) => ({ entry, cidr: parseCidr(entry) }));
  const invalid = parsed.filter((item) => item.cidr === undefined).map((item) => item.entry);
  if (invalid.length > 0) {
    problems.push({
      variable: 'MORDN_TRUSTED_PROXIES',
      message: `must be a comma-separated list of CIDRs such as 10.0.0.0/8,::1/128 (not ${invalid.map((entry) => `"${entry}"`).join(', ')})`,
    });
    return [];
  }
  return parsed.map((item) => item.cidr as Cidr);
}

function parsePublicUrl(environment: Environment, problems: Problem[]): string {
  const url = environment.MORDN_PUBLIC_URL;
  if (url === undefined) return `http://127.0.0.1:${environment.PORT}`;
  if (url.search || url.hash || url.username || url.password) {
    problems.push({ variable: 'MORDN_PUBLIC_URL', message: 'must not contain credentials, a query or a fragment' });
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/**
 * Parses the service configuration from environment variables (see docs/configuration.md). Pure: it
 * reads only `environment` and never exits; invalid input throws a `ConfigError` naming each
 * offending variable.
 *
 * @example
 * const config = loadConfig(process.env);
 */
export function loadConfig(environment: Record<string, string | undefined>, options: { cwd?: string } = {}): Config {
  const { parsed, problems: fieldProblems } = parseEnvironment(environment);
  const problems: Problem[] = [];
  const dataDir = path.resolve(options.cwd ?? process.cwd(), parsed.MORDN_DATA_DIR);

  for (const variable of ['MORDN_ADMIN_TOKEN', 'MORDN_METRICS_TOKEN'] as const) {
    const token = parsed[variable];
    if (token !== undefined && token.length < 16) {
      problems.push({ variable, message: 'must be at least 16 characters long' });
    }
  }
  if (parsed.MORDN_SIGNING_SECRET !== undefined && parsed.MORDN_SIGNING_SECRET.length < 32) {
    problems.push({ variable: 'MORDN_SIGNING_SECRET', message: 'must be at least 32 characters long' });
  }
  const allowedTypes = parseUploadTypes(parsed, problems);
  const model = parseModel(parsed, problems);
  const config: Config = {
    port: parsed.PORT,
    host: parsed.HOST,
    dataDir,
    database: parseDatabase(parsed, dataDir, problems),
    storage: parseStorage(parsed, problems),
    publicUrl: parsePublicUrl(parsed, problems),
    ...(parsed.MORDN_SIGNING_SECRET ? { signingSecret: parsed.MORDN_SIGNING_SECRET } : {}),
    downloadUrlTtlSeconds: parsed.MORDN_DOWNLOAD_URL_TTL_SECONDS,
    downloadAuditRetentionDays: parsed.MORDN_DOWNLOAD_AUDIT_RETENTION_DAYS,
    usageRetentionDays: parsed.MORDN_USAGE_RETENTION_DAYS,
    trustedProxies: parseTrustedProxies(parsed.MORDN_TRUSTED_PROXIES, problems),
    uploads: {
      maxBytes: parsed.MORDN_UPLOAD_MAX_BYTES,
      managedMaxBytes: parsed.MORDN_MANAGED_UPLOAD_MAX_BYTES,
      ...(allowedTypes ? { allowedTypes } : {}),
    },
    ...(parsed.MORDN_ADMIN_TOKEN ? { adminToken: parsed.MORDN_ADMIN_TOKEN } : {}),
    ...(parsed.MORDN_METRICS_TOKEN ? { metricsToken: parsed.MORDN_METRICS_TOKEN } : {}),
    ...(model ? { model } : {}),
    sandbox: parseSandbox(parsed, problems),
    logLevel: parsed.MORDN_LOG_LEVEL,
    shutdownTimeoutMs: parsed.MORDN_SHUTDOWN_TIMEOUT_MS,
    requestIdleTimeoutMs: parsed.MORDN_REQUEST_IDLE_TIMEOUT_MS,
    chatCoalesceMs: parsed.MORDN_CHAT_COALESCE_MS,
    chatDetachedGraceMs: parsed.MORDN_CHAT_DETACHED_GRACE_SECONDS * 1000,
    chatFanout: parsed.MORDN_CHAT_FANOUT,
    chatResumeMaxBytes: parsed.MORDN_CHAT_RESUME_MAX_BYTES,
    telemetry: parseTelemetry(parsed, problems),
    secretValues: collectSecrets(environment, parsed.DATABASE_URL),
  };
  // A variable already refused on its own is not reported again by a rule that read its default.
  const reported = new Set(fieldProblems.map((problem) => problem.variable));
  const allProblems = [...fieldProblems, ...problems.filter((problem) => !reported.has(problem.variable))];
  if (allProblems.length > 0) throw new ConfigError(allProblems);
  return config;
}

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** Traces are on with an OTLP endpoint; the exporter's protocol must be one it speaks over HTTP. */
function parseTelemetry(parsed: Environment, problems: Problem[]): TelemetryConfig {
  const endpoint = parsed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? parsed.OTEL_EXPORTER_OTLP_ENDPOINT;
  const enabled = endpoint !== undefined && parsed.OTEL_SDK_DISABLED?.toLowerCase() !== 'true';
  const variable =
    parsed.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL !== undefined
      ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
      : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = parsed[variable] ?? 'http/protobuf';
  let protocol: TelemetryConfig['protocol'] = 'http/protobuf';
  if ((OTLP_PROTOCOLS as readonly string[]).includes(value)) protocol = value as TelemetryConfig['protocol'];
  else if (enabled) {
    problems.push({ variable, message: `must be one of ${OTLP_PROTOCOLS.join(', ')} (got "${value}")` });
  }
  return { enabled, protocol, captureContent: parsed.MORDN_OTEL_CAPTURE_CONTENT };
}

/**
 * Parses every variable on its own. A variable that fails is reported and parsed again as unset
 * (its default), so the rules across variables still run and every problem is reported at once,
 * not one start-up attempt at a time.
 */
function parseEnvironment(environment: Record<string, string | undefined>): {
  parsed: Environment;
  problems: Problem[];
} {
  const first = EnvironmentSchema.safeParse(environment);
  if (first.success) return { parsed: first.data, problems: [] };
  const problems = first.error.issues.map((issue) => ({ variable: String(issue.path[0]), message: issue.message }));
  const failed = new Set(problems.map((problem) => problem.variable));
  const withDefaults = Object.fromEntries(Object.entries(environment).filter(([name]) => !failed.has(name)));
  return { parsed: EnvironmentSchema.parse(withDefaults), problems };
}

function collectSecrets(environment: Record<string, string | undefined>, databaseUrl: string | undefined): string[] {
  const secrets = SECRET_VARIABLES.map((name) => environment[name]?.trim()).filter(
    (value): value is string => value !== undefined && value.length >= 8,
  );
  if (databaseUrl) {
    try {
      const password = decodeURIComponent(new URL(databaseUrl).password);
      if (password.length >= 4) secrets.push(password);
    } catch {
      // An unparsable URL has already been reported as a configuration problem.
    }
  }
  return [...new Set(secrets)];
}
