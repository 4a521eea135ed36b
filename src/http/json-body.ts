import type { MiddlewareHandler } from 'hono';
import { ServiceError } from '../errors.js';
import type { AppEnv } from './app-env.js';

const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/i;

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * The rest of an oversized body is never read: `Connection: close` makes the server drop the
 * connection after answering instead of draining (and buffering) whatever the client still sends.
 */
function tooLarge(maxBytes: number): ServiceError {
  return new ServiceError('PAYLOAD_TOO_LARGE', `The request body exceeds the ${formatBytes(maxBytes)} limit.`, {
    headers: { Connection: 'close' },
  });
}

function interrupted(cause?: unknown): ServiceError {
  return new ServiceError('REQUEST_INTERRUPTED', 'The request body ended before it was complete.', {
    headers: { Connection: 'close' },
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Reads a request body into memory, refusing it (413 naming the limit) as soon as it passes
 * `maxBytes`. A declared Content-Length over the limit is refused before reading anything; a
 * chunked body is counted while streaming and never buffered past the limit. A body cut short (the
 * client went away, or sent less than its Content-Length) is a 400 `REQUEST_INTERRUPTED`.
 */
export async function readBodyWithLimit(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    // The only source of this stream is the client: a read fails when it went away or sent less
    // than it declared. That is the caller's doing, never an internal error.
    const { done, value } = await reader.read().catch((error: unknown) => {
      throw interrupted(error);
    });
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
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

/**
 * For JSON routes: a body, when present, must be `application/json` (415 otherwise) and at most
 * `maxBytes` long (413 naming the limit, for chunked bodies too). The bounded body is handed to
 * Hono's body cache, so validators parse it without touching the stream again.
 */
export function jsonBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  return async (c, next) => {
    const headers = c.req.raw.headers;
    const hasBody = headers.has('transfer-encoding') || Number(headers.get('content-length') ?? '0') > 0;
    if (!hasBody) return next();
    const mediaType = (headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    if (!JSON_MEDIA_TYPE.test(mediaType)) {
      throw new ServiceError(
        'UNSUPPORTED_MEDIA_TYPE',
        `This route accepts application/json bodies (got ${mediaType === '' ? 'no Content-Type' : mediaType}).`,
      );
    }
    const body = await readBodyWithLimit(c.req.raw, maxBytes);
    // Hono keeps body promises in this cache (its type says otherwise); validators read from it.
    (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(decoder.decode(body));
    return next();
  };
}
