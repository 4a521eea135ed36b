import { ServiceError } from '../errors.js';
import { formatBytes, formatDuration } from '../format.js';

/** What `MORDN_REQUEST_IDLE_TIMEOUT_MS` defaults to, and what a library handler uses unless told. */
export const DEFAULT_REQUEST_IDLE_TIMEOUT_MS = 30_000;

/** The bounds of reading one request body. */
export interface BodyLimits {
  /** Refused (413 naming it) as soon as the body passes it, for chunked bodies too. */
  maxBytes: number;
  /** Refused (408) when the client sends nothing for this long before the body is complete. */
  idleTimeoutMs: number;
}

/**
 * Refusals made while the body was still arriving say `Connection: close`: the connection is
 * closed after the answer, once the client had a short while to finish sending (the server's
 * lingering close), never reused for another request.
 */
export const CLOSE_CONNECTION = { headers: { Connection: 'close' } };

/**
 * The 408 for a client that stopped sending its body: `subject` names what was being sent.
 *
 * @example
 * throw stalledRequest(30_000, 'The upload'); // "The upload sent nothing for 30 s (the idle limit) …"
 */
export function stalledRequest(idleTimeoutMs: number, subject = 'The request'): ServiceError {
  return new ServiceError(
    'REQUEST_TIMEOUT',
    `${subject} sent nothing for ${formatDuration(idleTimeoutMs)} (the idle limit) and was abandoned; nothing was stored.`,
    CLOSE_CONNECTION,
  );
}

function tooLarge(maxBytes: number): ServiceError {
  return new ServiceError(
    'PAYLOAD_TOO_LARGE',
    `The request body exceeds the ${formatBytes(maxBytes)} limit.`,
    CLOSE_CONNECTION,
  );
}

function interrupted(cause?: unknown): ServiceError {
  return new ServiceError('REQUEST_INTERRUPTED', 'The request body ended before it was complete.', {
    ...CLOSE_CONNECTION,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Reads a request body into memory, refusing it (413 naming the limit) as soon as it passes
 * `maxBytes`. A declared Content-Length over the limit is refused before reading anything; a
 * chunked body is counted while streaming and never buffered past the limit. A client that sends
 * nothing for `idleTimeoutMs` before its body is complete is a 408 `REQUEST_TIMEOUT`; a body cut
 * short (the client went away, or sent less than its Content-Length) is a 400 `REQUEST_INTERRUPTED`.
 *
 * @example
 * const bytes = await readBodyWithLimit(request, { maxBytes: 64 * 1024, idleTimeoutMs: 30_000 });
 */
export async function readBodyWithLimit(request: Request, limits: BodyLimits): Promise<Uint8Array> {
  const { maxBytes, idleTimeoutMs } = limits;
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  // One timer for the whole body, restarted by every chunk: it measures silence, not duration.
  let onIdle: (() => void) | undefined;
  const idle = new Promise<never>((_resolve, reject) => {
    onIdle = () => reject(stalledRequest(idleTimeoutMs));
  });
  idle.catch(() => undefined);
  const timer = setTimeout(() => onIdle?.(), idleTimeoutMs);
  try {
    for (;;) {
      // The only source of this stream is the client: a read fails when it went away or sent less
      // than it declared. That is the caller's doing, never an internal error.
      const { done, value } = await Promise.race([
        reader.read().catch((error: unknown) => {
          throw interrupted(error);
        }),
        idle,
      ]);
      if (done) break;
      timer.refresh();
      size += value.byteLength;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(value);
    }
  } catch (error) {
    // Stop reading: what the client still sends is the server's to discard (lingering close).
    await reader.cancel().catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  // A client that left before the body was read does not always fail the read: the Node adapter
  // may end the stream early instead. A short body, or (chunked, with no length to compare) a
  // request already aborted, was cut short all the same.
  if (declared !== null ? size !== Number(declared) : request.signal.aborted) throw interrupted();
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}
