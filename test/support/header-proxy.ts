import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the proxy passed on: what the client sent, before the proxy added anything. */
export interface ProxiedRequest {
  method: string;
  /** The request target (path and query). */
  path: string;
  /** The client's headers, names in lower case. */
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The status the upstream answered with. */
  status: number;
}

export interface HeaderProxy {
  /** The proxy's origin, `http://127.0.0.1:<port>`. */
  url: string;
  /** Every request passed on so far, in the order the upstream began answering them. */
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/** Hop-by-hop headers, which a proxy does not pass on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te']);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

/**
 * A loopback HTTP proxy in front of `upstream` (an origin, or a function giving it per request, for
 * a proxy that must listen before the service behind it exists) that adds `addHeaders` (or what a
 * function gives per request) to every request
 * and passes everything else on unchanged: method, path, the client's headers (Host rewritten to
 * the upstream) and the body byte for byte; the answer's status, headers and body stream back as
 * they come (SSE included). It records what the client sent, so tests can check the wire. For
 * clients that cannot send headers of their own (the conformance suite), and to observe the ones
 * that can.
 */
export async function startHeaderProxy(
  upstream: string | (() => string),
  addHeaders: Record<string, string> | (() => Record<string, string>) = {},
): Promise<HeaderProxy> {
  const requests: ProxiedRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const target = new URL(typeof upstream === 'string' ? upstream : upstream());
      const outgoing = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: request.method,
          path: request.url,
          headers: {
            ...endToEnd(request.headers),
            host: target.host,
            'content-length': String(body.length),
            ...(typeof addHeaders === 'function' ? addHeaders() : addHeaders),
          },
        },
        (answer) => {
          requests.push({
            method: request.method ?? '',
            path: request.url ?? '',
            headers: request.headers,
            body,
            status: answer.statusCode ?? 0,
          });
          response.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
          answer.pipe(response);
        },
      );
      outgoing.on('error', (error) => {
        if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(`proxy: ${error.message}`);
      });
      // A client that gives up (an SSE stream it no longer reads) ends the upstream request too.
      response.on('close', () => outgoing.destroy());
      outgoing.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** The JSON-RPC methods a recorded request carried (one, or several for a batch; none for a GET). */
export function jsonRpcMethods(request: ProxiedRequest): string[] {
  if (request.body.length === 0) return [];
  try {
    const parsed: unknown = JSON.parse(request.body.toString('utf8'));
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    return messages
      .map((message) => (message as { method?: unknown }).method)
      .filter((method): method is string => typeof method === 'string');
  } catch {
    return [];
  }
}
