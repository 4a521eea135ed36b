import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { Pool } from 'undici';

/** The oldest Engine API whose fields this backend relies on (Docker 20.10). */
const MIN_API_VERSION = [1, 41] as const;
/** Bytes of an error body kept for the message. */
const MAX_ERROR_BYTES = 4096;
/** Bytes of a JSON answer accepted from the daemon (container inspect is the largest). */
const MAX_JSON_BYTES = 4 * 1024 * 1024;
const CONNECTIONS = 16;

/** A non-2xx answer of the Engine API, with the daemon's own message. */
export class EngineApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'EngineApiError';
  }
}

export interface EngineRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path below the version prefix, e.g. `/containers/create?name=x`. */
  path: string;
  body?: unknown;
  /** Statuses that are not errors beyond 2xx (e.g. 304 for starting a running container). */
  accept?: number[];
  signal?: AbortSignal;
}

/** A thin client of the Docker Engine API: JSON calls and hijacked exec streams. */
export interface EngineApi {
  /** The parsed JSON answer (`undefined` for an empty or non-JSON body) and its status. */
  call<T>(request: EngineRequest): Promise<{ status: number; body: T | undefined }>;
  /** Starts a hijacked stream (exec attach): the raw socket once the daemon switched protocols. */
  hijack(path: string, body: unknown): Promise<Duplex>;
  close(): Promise<void>;
}

function origin(host: string): { url: string; socketPath?: string } {
  if (host.startsWith('unix://')) return { url: 'http://docker', socketPath: host.slice('unix://'.length) };
  return { url: host.replace(/^tcp:\/\//, 'http://').replace(/\/$/, '') };
}

function versionAtLeast(version: string, minimum: readonly [number, number]): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > minimum[0] || (major === minimum[0] && minor >= minimum[1]);
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new Error(`The Docker daemon sent more than ${limit} bytes.`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function daemonMessage(status: number, raw: Buffer): string {
  const text = raw.subarray(0, MAX_ERROR_BYTES).toString('utf8');
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: the text itself.
  }
  return text.trim() || `HTTP ${status}`;
}

/**
 * Connects to the daemon at `host` (`unix:///var/run/docker.sock`, or `tcp://proxy:2375` for a
 * socket proxy). The API version is negotiated once, on first use: the daemon's own version,
 * refused below 1.41.
 */
export function createEngineApi(host: string): EngineApi {
  const { url, socketPath } = origin(host);
  const pool = new Pool(url, {
    connections: CONNECTIONS,
    ...(socketPath ? { socketPath } : {}),
    headersTimeout: 60_000,
    bodyTimeout: 0,
  });
  let prefix: Promise<string> | undefined;

  const send = async (request: EngineRequest & { path: string }) => {
    const response = await pool.request({
      method: request.method,
      path: request.path,
      headers: request.body === undefined ? {} : { 'content-type': 'application/json' },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const raw = await readLimited(response.body, MAX_JSON_BYTES);
    const ok =
      (response.statusCode >= 200 && response.statusCode < 300) || request.accept?.includes(response.statusCode);
    if (!ok) throw new EngineApiError(response.statusCode, daemonMessage(response.statusCode, raw));
    const json = String(response.headers['content-type'] ?? '').includes('json');
    return { status: response.statusCode, raw, json };
  };

  const versionPrefix = () => {
    prefix ??= send({ method: 'GET', path: '/version' }).then(
      ({ raw }) => {
        const { ApiVersion } = JSON.parse(raw.toString('utf8')) as { ApiVersion?: unknown };
        if (typeof ApiVersion !== 'string' || !versionAtLeast(ApiVersion, MIN_API_VERSION)) {
          throw new Error(
            `The Docker daemon speaks Engine API ${String(ApiVersion)}; ${MIN_API_VERSION.join('.')} or newer is required.`,
          );
        }
        return `/v${ApiVersion}`;
      },
      (error: unknown) => {
        prefix = undefined;
        throw error;
      },
    );
    return prefix;
  };

  return {
    async call<T>(request: EngineRequest) {
      const path = `${await versionPrefix()}${request.path}`;
      const { status, raw, json } = await send({ ...request, path });
      return { status, body: json && raw.length > 0 ? (JSON.parse(raw.toString('utf8')) as T) : undefined };
    },

    async hijack(path, body) {
      const fullPath = `${await versionPrefix()}${path}`;
      return new Promise<Duplex>((resolve, reject) => {
        let settled = false;
        const fail = (error: Error) => {
          if (settled) return;
          settled = true;
          reject(error);
        };
        const refusal: Buffer[] = [];
        let refusedWith = 0;
        const handler: Dispatcher.DispatchHandler = {
          onRequestStart() {},
          onRequestUpgrade(_controller, _statusCode, _headers, socket) {
            settled = true;
            resolve(socket);
          },
          // No upgrade: the daemon refused; its body says why.
          onResponseStart(_controller, statusCode) {
            refusedWith = statusCode;
          },
          onResponseData(_controller, chunk) {
            if (Buffer.concat(refusal).length < MAX_ERROR_BYTES) refusal.push(chunk);
          },
          onResponseEnd() {
            fail(new EngineApiError(refusedWith, daemonMessage(refusedWith, Buffer.concat(refusal))));
          },
          onResponseError(_controller, error) {
            fail(error);
          },
        };
        pool.dispatch(
          {
            method: 'POST',
            path: fullPath,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
            upgrade: 'tcp',
          },
          handler,
        );
      });
    },

    close: () => pool.close(),
  };
}
