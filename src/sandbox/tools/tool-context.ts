import type { Kysely } from 'kysely';
import type { SandboxConfig } from '../../config.js';
import type { DatabaseSchema } from '../../db/schema.js';
import type { Logger } from '../../logger.js';
import type { FileStorage } from '../../storage/file-storage.js';
import type { FileOwner } from '../../uploads/file-registry.js';
import type { UsageSink } from '../../usage/usage-types.js';
import type { ExecOptions, SandboxBackend, WorkspaceFileErrorCode } from '../backend.js';
import type { EffectivePolicy } from '../egress/effective-policy.js';
import type { EgressProxy } from '../egress/egress-proxy.js';
import type { Workspace } from '../workspaces.js';

/** Everything a tool needs for one call, already scoped to the caller's own workspace. */
export interface ToolContext {
  backend: SandboxBackend;
  workspace: Workspace;
  owner: FileOwner;
  db: Kysely<DatabaseSchema>;
  storage: FileStorage;
  logger: Logger;
  requestId: string;
  limits: SandboxConfig;
  /** Byte ceiling of a published file (the operator's managed upload ceiling). */
  publishMaxBytes: number;
  /** A private host directory for bytes in transit. */
  tempDir: string;
  /** Aborted when the HTTP request is; kills running processes. */
  signal: AbortSignal;
  /** What the workspace's code may reach over the network (its agent's published policy, capped). */
  network: EffectivePolicy;
  /** The egress proxy, to tell a command which of its connections were refused. */
  egress?: Pick<EgressProxy, 'refusalsSince'>;
  /** Where published bytes are metered (`artifactBytesPublished`). */
  usage?: UsageSink;
  /** Live output of `sandbox_exec`, chunk by chunk (see `ExecOptions.onOutput`); absent for other calls. */
  onOutput?: ExecOptions['onOutput'];
  /** Set by a quota check: the workspace's size after this call's write. */
  measuredBytes?: number;
}

/** A stable, model-facing error code of a failed tool call: the backend's file codes and ours. */
export type ToolErrorCode =
  | WorkspaceFileErrorCode
  | 'UNKNOWN_TOOL'
  | 'INVALID_INPUT'
  | 'NOT_TEXT'
  | 'QUOTA_EXCEEDED'
  | 'UPLOAD_NOT_FOUND'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'POLICY_DENIED'
  | 'SANDBOX_UNAVAILABLE'
  | 'ABORTED'
  | 'STORAGE_UNAVAILABLE'
  | 'LIMIT_REACHED'
  | 'INTERNAL';

/** A tool failure: it becomes an `isError` result, never a success and never a file. */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    /** Members the result carries beside `code` and `message` (a limit's `limit`, `value`, `used`, `resetAt`). */
    readonly fields?: Readonly<Record<string, string | number | null>>,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}
