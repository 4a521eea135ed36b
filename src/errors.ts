/**
 * The one domain error type of the service. Services throw `ServiceError`; each transport maps it
 * once (HTTP → problem+json in `src/http/problem.ts`, MCP → `isError` results, chat → masked text).
 */

/** Every stable error code, with the HTTP status it maps to. */
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  MALFORMED_JSON: 400,
  INVALID_MULTIPART: 400,
  REQUEST_INTERRUPTED: 400,
  MISSING_USER: 400,
  INVALID_USER: 400,
  MISSING_API_KEY: 401,
  INVALID_API_KEY: 401,
  INVALID_ADMIN_TOKEN: 401,
  INVALID_METRICS_TOKEN: 401,
  INVALID_TOKEN: 401,
  UNAUTHENTICATED: 401,
  CONSOLE_SIGNED_OUT: 401,
  INSUFFICIENT_PERMISSION: 403,
  ANONYMOUS_USER: 403,
  INVALID_SIGNATURE: 403,
  UPLOADS_DISABLED: 403,
  FORBIDDEN_ORIGIN: 403,
  CSRF_FAILED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  NO_DRAFT_CONFIG: 409,
  ACTIVE_KEYS: 409,
  ANSWER_IN_PROGRESS: 409,
  TURN_ALREADY_ANSWERED: 409,
  PAYLOAD_TOO_LARGE: 413,
  FILE_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  LIMIT_REACHED: 429,
  INTERNAL: 500,
  STORAGE_UNAVAILABLE: 503,
  DATABASE_UNAVAILABLE: 503,
  MODEL_NOT_CONFIGURED: 503,
  MANAGED_SANDBOX_UNAVAILABLE: 503,
  UPSTREAM_UNAVAILABLE: 502,
  INSUFFICIENT_STORAGE: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A field-level validation problem, reported as `errors[]` in problem bodies. */
export interface FieldError {
  /** Dotted path of the offending key, e.g. `runtime.sandbox.provider`; empty for the root. */
  path: string;
  message: string;
}

export interface ServiceErrorOptions {
  /** Field-level details (validation). */
  errors?: FieldError[];
  /** Extra response headers, e.g. `Retry-After` or `WWW-Authenticate`. */
  headers?: Record<string, string>;
  /** Extra members of the problem body that a client acts on, e.g. `assistantMessageId`. */
  fields?: Readonly<Record<string, string | number | null>>;
  cause?: unknown;
  /** A status other than the code's usual one (`LIMIT_REACHED` of storage is 413, not 429). */
  status?: number;
}

/**
 * An expected failure with a stable `code` and a message safe to show the caller.
 * The message must never contain secrets: it is returned verbatim in the response body.
 *
 * @example
 * throw new ServiceError('NOT_FOUND', 'No such agent.');
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string> | undefined;
  readonly fields: Readonly<Record<string, string | number | null>> | undefined;

  constructor(code: ErrorCode, message: string, options: ServiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ServiceError';
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.errors = options.errors;
    this.headers = options.headers;
    this.fields = options.fields;
  }
}

export function isServiceError(value: unknown): value is ServiceError {
  return value instanceof ServiceError;
}

/** System and database codes that mean the disk (or the user's quota on it) is full. */
const OUT_OF_SPACE_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL', '53100']);

/**
 * Whether `error` is a write refused for lack of space: a full filesystem or quota, SQLite's
 * `SQLITE_FULL` or PostgreSQL's `disk_full`. Such a failure is the operator's to fix, not a bug,
 * and is answered as `INSUFFICIENT_STORAGE` rather than a masked 500.
 */
export function isOutOfSpace(error: unknown): boolean {
  return error instanceof Error && 'code' in error && OUT_OF_SPACE_CODES.has(String(error.code));
}
