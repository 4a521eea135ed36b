import net from 'node:net';

/** A raw TCP connection to a test server, recording everything it receives until the server closes it. */
export interface RawConnection {
  socket: net.Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves once the server has closed the connection, with all it sent and when it closed. */
  closed: Promise<{ response: string; closedAt: number }>;
  /** Writes and resolves once the bytes are handed to the kernel. */
  write(data: string | Buffer): Promise<void>;
}

/**
 * Opens a plain TCP connection to `url`'s host and port, for requests no HTTP client sends:
 * a head that never ends, a body that stops half way.
 */
export async function openRawConnection(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<{ response: string; closedAt: number }>((resolve) => {
    // A reset after the answer (the server closing a connection with unread bytes) is still a close.
    socket.on('error', () => undefined);
    socket.once('close', () => resolve({ response: Buffer.concat(chunks).toString(), closedAt: performance.now() }));
  });
  return {
    socket,
    received: () => Buffer.concat(chunks).toString(),
    closed,
    write: (data) =>
      new Promise((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve()))),
  };
}

/** The status code and JSON body of a raw HTTP/1.1 response (`undefined` body when it has none). */
export function parseRawResponse(response: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? -1);
  const separator = response.indexOf('\r\n\r\n');
  const rest = separator === -1 ? '' : response.slice(separator + 4);
  const head = separator === -1 ? response : response.slice(0, separator);
  const text = /transfer-encoding: chunked/i.test(head) ? decodeChunked(rest) : rest;
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  return { status, body };
}

function decodeChunked(text: string): string {
  let result = '';
  let rest = text;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    if (lineEnd === -1) return result;
    const size = Number.parseInt(rest.slice(0, lineEnd), 16);
    if (!(size > 0)) return result;
    result += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}
