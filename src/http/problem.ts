import { HTTPException } from 'hono/http-exception';
import { ERROR_STATUS, type ErrorCode, type FieldError, ServiceError } from '../errors.js';

/** RFC 9457 problem details, extended with our stable `code` and the request id. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  requestId: string;
  errors?: FieldError[];
  /** A code's own members (see `ServiceError.fields`). */
  [member: string]: unknown;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export function problemType(code: ErrorCode): string {
  return `urn:mordn:problem:${code.toLowerCase().replaceAll('_', '-')}`;
}

/** The body of a problem response for a service error. */
export function toProblem(error: ServiceError, requestId: string): Problem {
  return {
    ...error.fields,
    type: problemType(error.code),
    title: TITLES[error.status] ?? 'Error',
    status: error.status,
    detail: error.message,
    code: error.code,
    requestId,
    ...(error.errors ? { errors: error.errors } : {}),
  };
}

export function problemResponse(error: ServiceError, requestId: string): Response {
  const headers = new Headers(error.headers);
  headers.set('Content-Type', 'application/problem+json');
  headers.set('Cache-Control', 'no-store');
  headers.set('X-Request-Id', requestId);
  return new Response(JSON.stringify(toProblem(error, requestId)), { status: error.status, headers });
}

/**
 * Turns anything thrown into a service error that is safe to send. Hono's own exceptions (malformed
 * JSON, oversized bodies) keep their meaning; anything unexpected becomes a masked 500 whose
 * original is returned separately for logging.
 */
export function normalizeError(error: unknown): { serviceError: ServiceError; unexpected?: unknown } {
  if (error instanceof ServiceError) return { serviceError: error };
  if (error instanceof HTTPException) {
    if (error.status === 400 && /json/i.test(error.message)) {
      return { serviceError: new ServiceError('MALFORMED_JSON', 'The request body is not valid JSON.') };
    }
    if (error.status === 413) {
      return { serviceError: new ServiceError('PAYLOAD_TOO_LARGE', 'The request body is too large.') };
    }
    const code = (Object.keys(ERROR_STATUS) as ErrorCode[]).find(
      (candidate) => ERROR_STATUS[candidate] === error.status,
    );
    if (code && error.status < 500) return { serviceError: new ServiceError(code, error.message) };
  }
  return {
    serviceError: new ServiceError('INTERNAL', 'An unexpected error occurred; quote the request id when reporting it.'),
    unexpected: error,
  };
}
