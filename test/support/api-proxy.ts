import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the proxy saw it on its way to the service. */
export interface ProxiedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * Decides the answer to one request: `undefined` passes the service's answer through, a
 * `Response` replaces it (the rewrite may read `upstream` first).
 */
export type ProxyRewrite = (
  request: ProxiedRequest,
  upstream: Response,
) => Response | undefined | Promise<Response | undefined>;

export interface ApiProxy {
  /** `http://127.0.0.1:<port>`, usable as a `selfBaseUrl`. */
  origin: string;
  /** Every request received, in order. */
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/** Headers that belong to one hop, or that the proxy recomputes. */
const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/**
 * A real HTTP proxy on 127.0.0.1 in front of a service, forwarding every request and letting a
 * test replace the answers of the ones it picks: how a test stands in for an API that answers
 * differently (an older signer, another protocol revision) without mocking the client under test.
 *
 * @example
 * const proxy = await startApiProxy(service.url, (request, upstream) =>
 *   request.path === '/v1/uploads/resign' ? new Response('{}', { status: 404 }) : undefined);
 */
export async function startApiProxy(target: string, rewrite: ProxyRewrite): Promise<ApiProxy> {
  const requests: ProxiedRequest[] = [];
  const server = http.createServer(async (incoming, outgoing) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of incoming) chunks.push(chunk as Buffer);
      const request: ProxiedRequest = {
        method: incoming.method ?? 'GET',
        path: incoming.url ?? '/',
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const headers = new Headers();
      for (const [name, value] of Object.entries(incoming.headers)) {
        if (value === undefined || HOP_HEADERS.has(name)) continue;
        headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const upstream = await fetch(`${target}${request.path}`, {
        method: request.method,
        headers,
        redirect: 'manual',
        ...(request.method === 'GET' || request.method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }),
      });
      const answer = (await rewrite(request, upstream)) ?? upstream;
      if (answer !== upstream && !upstream.bodyUsed) await upstream.body?.cancel();
      const bytes = Buffer.from(await answer.arrayBuffer());
      const answerHeaders: Record<string, string> = {};
      for (const [name, value] of answer.headers) {
        if (!HOP_HEADERS.has(name) && name !== 'content-encoding') answerHeaders[name] = value;
      }
      outgoing.writeHead(answer.status, answerHeaders);
      outgoing.end(bytes);
    } catch {
      outgoing.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
