import { connect } from 'node:net';
import type { TunnelStream } from '../supervisor/tunnel-stream.js';
import { printableTarget } from './refusals.js';

const CONNECT_TIMEOUT_MS = 10_000;

/** A checked destination of a `CONNECT`: the address to connect to, and the target as asked. */
export interface TunnelDestination {
  address: string;
  family: 4 | 6;
  port: number;
  /** `host:port` as the client asked for it, for its error message. */
  target: string;
}

function gatewayError(target: string, error: Error | undefined): string {
  const detail = (error as NodeJS.ErrnoException | undefined)?.code ?? 'the connection failed';
  const body = `${printableTarget(target)} could not be reached (${detail}).\n`;
  return [
    'HTTP/1.1 502 Bad Gateway',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Answers an allowed `CONNECT`: connects to the checked address (never a name: no second
 * lookup), answers `200 Connection Established`, then relays bytes both ways untouched (TLS stays
 * end to end). Each side's end reaches the other with what was still on its way; a failure of
 * either ends both. A destination that cannot be reached is a `502` naming it. `onClosed` gets
 * the bytes moved each way once the client's connection is gone.
 */
export function relayConnect(
  client: TunnelStream,
  head: Buffer,
  destination: TunnelDestination,
  onClosed: (bytes: { up: number; down: number }) => void,
): void {
  const upstream = connect({
    host: destination.address,
    port: destination.port,
    family: destination.family,
    noDelay: true,
  });
  upstream.setTimeout(CONNECT_TIMEOUT_MS);
  upstream.once('timeout', () => upstream.destroy(new Error('connect timeout')));
  const before = { up: client.bytesFromSandbox, down: client.bytesToSandbox };
  let established = false;
  upstream.once('connect', () => {
    established = true;
    upstream.setTimeout(0);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.once('error', (error) => {
    if (!established) client.end(gatewayError(destination.target, error));
    else client.destroy();
  });
  client.once('error', () => upstream.destroy());
  client.once('close', () => {
    upstream.destroy();
    onClosed({ up: client.bytesFromSandbox - before.up, down: client.bytesToSandbox - before.down });
  });
}
