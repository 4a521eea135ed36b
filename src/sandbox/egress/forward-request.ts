import {
  Agent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';

/** Headers that belong to one hop (RFC 9110 §7.6.1), never passed on by a proxy. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** Upstream connections are reused between requests to the same checked address and port. */
const upstreamAgent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: 60_000 });

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    kept[name] = value;
  }
  return kept;
}

/**
 * Forwards one absolute-form `http://` request to an address the policy already checked: the
 * request line becomes origin-form, `Host` is the URL's authority (whatever `Host` the client
 * sent), hop-by-hop headers are dropped both ways, and bodies stream through with backpressure.
 * `onDone` gets the body bytes moved each way once the exchange is over (or failed).
 */
export function forwardRequest(
  request: IncomingMessage,
  response: ServerResponse,
  target: {
    url: URL;
    address: string;
    family: 4 | 6;
    port: number;
    onDone(bytes: { up: number; down: number }): void;
  },
): void {
  const bytes = { up: 0, down: 0 };
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    target.onDone(bytes);
  };
  const upstream = httpRequest({
    host: target.address,
    family: target.family,
    port: target.port,
    method: request.method,
    path: `${target.url.pathname}${target.url.search}`,
    headers: { ...endToEnd(request.headers), host: target.url.host },
    setHost: false,
    agent: upstreamAgent,
  });
  request.on('data', (chunk: Buffer) => {
    bytes.up += chunk.length;
  });
  request.pipe(upstream);
  upstream.on('response', (answer: IncomingMessage) => {
    response.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
    answer.on('data', (chunk: Buffer) => {
      bytes.down += chunk.length;
    });
    answer.pipe(response);
    answer.once('end', finish);
    answer.once('error', () => {
      response.destroy();
      finish();
    });
  });
  upstream.once('error', (error: NodeJS.ErrnoException) => {
    if (!response.headersSent) {
      const body = `${target.url.host} could not be reached (${error.code ?? 'the connection failed'}).\n`;
      response.writeHead(502, {
        'Content-Type': 'text/plain; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
      });
      response.end(body);
    } else {
      response.destroy();
    }
    finish();
  });
  response.once('close', () => {
    if (!response.writableFinished) upstream.destroy();
    finish();
  });
}
