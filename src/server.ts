import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { closeConnectionsLingeringly } from './http/lingering-close.js';
import { answerLiveness } from './liveness.js';
import type { Logger } from './logger.js';

export interface RunningServer {
  /** `http://host:port` the server listens on (the real port when 0 was asked for). */
  readonly url: string;
  /** The literal loopback origin reaching this server from the same host (for `selfBaseUrl`). */
  readonly loopbackUrl: string;
  readonly server: Server;
  /**
   * Stops accepting connections, lets in-flight requests finish for up to `timeoutMs`, then cuts
   * whatever is left. Resolves once the listener is closed.
   */
  close(timeoutMs: number): Promise<void>;
}

export interface StartServerOptions {
  fetch: (request: Request, env: never) => Response | Promise<Response>;
  host: string;
  port: number;
  logger?: Logger;
  /**
   * Time a client has to send a complete request head (default 30 s, at most 300 s). A slower one
   * is answered `408 Request Timeout` by Node and its connection closed, so a client trickling
   * header bytes cannot hold a connection open.
   */
  requestHeadTimeoutMs?: number;
}

/** Node's own bound on receiving a whole request; a request head must arrive within it too. */
const WHOLE_REQUEST_TIMEOUT_MS = 300_000;
const DEFAULT_REQUEST_HEAD_TIMEOUT_MS = 30_000;

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Serves a fetch handler over HTTP/1.1 with `@hono/node-server`. `/healthz` is answered by the
 * server itself (see `answerLiveness`); every other request goes to `fetch`.
 */
export function startServer(options: StartServerOptions): Promise<RunningServer> {
  const listener = getRequestListener(options.fetch as never, {
    hostname: options.host,
    // node-server's lightweight Request/Response make responses ~2.5x faster than undici's; they
    // remain instances of the standard classes for every consumer.
    overrideGlobalObjects: true,
  });
  const headersTimeout = Math.min(
    options.requestHeadTimeoutMs ?? DEFAULT_REQUEST_HEAD_TIMEOUT_MS,
    WHOLE_REQUEST_TIMEOUT_MS,
  );
  const server = createServer({
    headersTimeout,
    requestTimeout: WHOLE_REQUEST_TIMEOUT_MS,
    // Node only notices an expired head when it sweeps its connections (every 30 s by default):
    // sweep often enough that the timeout holds to within a fraction of itself.
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(headersTimeout / 4))),
  });
  // A refusal sent before its body was read closes the connection only once the client had a
  // chance to finish sending, so the client reads the refusal instead of a reset.
  server.on(
    'request',
    closeConnectionsLingeringly(server, (request, response) => {
      if (!answerLiveness(request, response)) void listener(request, response);
    }),
  );
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const url = `http://${formatHost(options.host)}:${port}`;
      const loopbackUrl = options.host === '::1' ? `http://[::1]:${port}` : `http://127.0.0.1:${port}`;
      resolve({ url, loopbackUrl, server, close: (timeoutMs) => closeGracefully(server, timeoutMs, options.logger) });
    });
  });
}

function closeGracefully(server: Server, timeoutMs: number, logger: Logger | undefined): Promise<void> {
  return new Promise((resolve) => {
    const forceTimer = setTimeout(() => {
      logger?.warn({ timeoutMs }, 'shutdown timeout reached; closing remaining connections');
      server.closeAllConnections();
    }, timeoutMs);
    // A keep-alive connection goes idle once its in-flight response is sent; close it then, or it
    // would hold close() open until the client hangs up.
    const idleSweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearTimeout(forceTimer);
      clearInterval(idleSweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}
