/**
 * The console's fetch wrapper: same-origin requests carrying the session cookie, the CSRF token on
 * every non-GET request, and problem+json answers turned into {@link ApiError}s.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface FieldProblem {
  path: string;
  message: string;
}

/** A failed request: the problem's `status`, `code` and `detail` (what the user is shown). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly requestId: string | undefined;
  readonly fieldErrors: FieldProblem[];

  constructor(status: number, code: string, detail: string, requestId?: string, fieldErrors: FieldProblem[] = []) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.requestId = requestId;
    this.fieldErrors = fieldErrors;
  }
}

export interface RequestOptions {
  method?: Method;
  body?: unknown;
  query?: Query;
  csrfToken?: string | undefined;
}

/** `path` with the defined entries of `query` appended. */
export function withQuery(path: string, query: Query | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** One path segment, encoded (ids and user ids come from the server and from integrators). */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fieldProblemsOf(value: unknown): FieldProblem[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((each) =>
    isRecord(each) && typeof each.message === 'string'
      ? [{ path: typeof each.path === 'string' ? each.path : '', message: each.message }]
      : [],
  );
}

/** The error a non-2xx answer stands for, from its problem body when it has one. */
export function problemError(status: number, body: unknown, statusText = ''): ApiError {
  if (isRecord(body)) {
    const detail =
      typeof body.detail === 'string' && body.detail !== ''
        ? body.detail
        : typeof body.title === 'string'
          ? body.title
          : `The request failed (HTTP ${status}).`;
    return new ApiError(
      typeof body.status === 'number' ? body.status : status,
      typeof body.code === 'string' ? body.code : 'HTTP_ERROR',
      detail,
      typeof body.requestId === 'string' ? body.requestId : undefined,
      fieldProblemsOf(body.errors),
    );
  }
  const reason = statusText === '' ? '' : ` ${statusText}`;
  return new ApiError(status, 'HTTP_ERROR', `The request failed (HTTP ${status}${reason}).`);
}

export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json, application/problem+json' };
  if (method !== 'GET' && options.csrfToken !== undefined) headers['X-CSRF-Token'] = options.csrfToken;
  const init: RequestInit = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(withQuery(path, options.query), init);
  } catch {
    throw new ApiError(0, 'NETWORK_ERROR', 'The server could not be reached. Check the connection and try again.');
  }
  const text = response.status === 204 ? '' : await response.text();
  let body: unknown;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  if (!response.ok) throw problemError(response.status, body, response.statusText);
  return body as T;
}

/** What to show for a caught error: the problem's detail and its field errors. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    const fields = error.fieldErrors.map((each) => (each.path === '' ? each.message : `${each.path}: ${each.message}`));
    return [error.detail, ...fields].join(' ');
  }
  if (error instanceof Error && error.message !== '') return error.message;
  return 'Something went wrong.';
}

/** Requests bound to the signed-in session. */
export interface Api {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body?: unknown, query?: Query): Promise<T>;
  put<T>(path: string, body: unknown): Promise<T>;
  patch<T>(path: string, body: unknown): Promise<T>;
  delete<T = void>(path: string, query?: Query): Promise<T>;
}

/**
 * An {@link Api} sending `csrfToken` on writes. A 401 from any call means the session ended:
 * `onUnauthorized` runs (the console returns to sign-in) and the call still rejects.
 */
export function createApi(csrfToken: string, onUnauthorized: (error: ApiError) => void): Api {
  async function call<T>(path: string, options: RequestOptions): Promise<T> {
    try {
      return await request<T>(path, { ...options, csrfToken });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) onUnauthorized(error);
      throw error;
    }
  }
  function opts(method: Method, body: unknown, query: Query | undefined): RequestOptions {
    return {
      method,
      ...(body === undefined ? {} : { body }),
      ...(query === undefined ? {} : { query }),
    };
  }
  return {
    get: (path, query) => call(path, opts('GET', undefined, query)),
    post: (path, body, query) => call(path, opts('POST', body, query)),
    put: (path, body) => call(path, opts('PUT', body, undefined)),
    patch: (path, body) => call(path, opts('PATCH', body, undefined)),
    delete: (path, query) => call(path, opts('DELETE', undefined, query)),
  };
}
